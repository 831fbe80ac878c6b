// better-sqlite3 ships no types and @types/better-sqlite3 is not a dependency: this declares
// the part of its API the records store uses, so the store stays strictly typed.
declare module "better-sqlite3" {
  interface RunResult {
    changes: number;
    lastInsertRowid: number | bigint;
  }
  interface Statement {
    run(...params: unknown[]): RunResult;
    get(...params: unknown[]): unknown;
    all(...params: unknown[]): unknown[];
  }
  interface Options {
    readonly?: boolean;
    fileMustExist?: boolean;
    timeout?: number;
  }
  class Database {
    constructor(path: string, options?: Options);
    prepare(sql: string): Statement;
    exec(sql: string): this;
    pragma(source: string, options?: { simple?: boolean }): unknown;
    transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
    close(): this;
    readonly open: boolean;
    readonly inTransaction: boolean;
  }
  export default Database;
  export type { RunResult, Statement };
}
