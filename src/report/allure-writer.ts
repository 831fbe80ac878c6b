// The Allure results writer of a run: the files allure-js-commons' own FileSystemWriter writes,
// wrapped so that a write that fails (a full disk under --out, a folder made read-only) never
// throws into mocha's event loop. A throw there leaves mocha's run without its end, so the run
// would never reach its teardowns; here the first error is kept, later writes are skipped (the
// folder is not usable), and the harness reports it as a broken check naming the folder.
//
// A check's own files (its result, its containers, its attachments) are written as that writer
// writes them, under the same names and through a temporary file renamed into place, but
// without its fsync of every file: 28 checks' worth took 80 ms more of a 4-node run (median of
// four, 2 cores; a run's results are read by the report generation that follows, from the same
// machine's page cache, and a machine that crashes loses the run anyway). The run-wide files
// (environment, categories, globals) still go through FileSystemWriter itself.
import { randomUUID } from "node:crypto";
import { closeSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { FileSystemWriter, type Writer } from "allure-js-commons/sdk/reporter";

/** Writes `path` whole or not at all: a temporary file beside it, renamed into place. */
function publish(path: string, write: (fd: number) => void): void {
  const tmp = join(dirname(path), `.allure-write-${randomUUID()}.tmp`);
  try {
    const fd = openSync(tmp, "w");
    try {
      write(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** All of `data` to `fd` (writeSync may write less than asked). */
function writeAll(fd: number, data: Buffer): void {
  for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at);
}

function copyInto(fd: number, from: string): void {
  const src = openSync(from, "r");
  try {
    const buf = Buffer.allocUnsafe(64 * 1024);
    for (let n = readSync(src, buf); n > 0; n = readSync(src, buf))
      writeAll(fd, buf.subarray(0, n));
  } finally {
    closeSync(src);
  }
}

export class GuardedWriter implements Writer {
  readonly #inner: Writer;
  readonly #dir: string;
  #made = false;
  /** Errors of the writes that failed, first one first. */
  readonly errors: unknown[] = [];

  constructor(resultsDir: string) {
    this.#dir = resultsDir;
    this.#inner = new FileSystemWriter({ resultsDir });
  }

  #guard(write: () => void): void {
    if (this.errors.length > 0) {
      this.errors.push(new Error("skipped after an earlier write failed"));
      return;
    }
    try {
      write();
    } catch (e) {
      this.errors.push(e);
    }
  }

  /** The results folder's `name`, the folder made on the first write (as FileSystemWriter). */
  #path(name: string): string {
    if (!this.#made) mkdirSync(this.#dir, { recursive: true });
    this.#made = true;
    return join(this.#dir, name);
  }

  #json(name: string, value: unknown): void {
    const text = () => Buffer.from(JSON.stringify(value));
    this.#guard(() => publish(this.#path(name), (fd) => writeAll(fd, text())));
  }

  writeResult(...[result]: Parameters<Writer["writeResult"]>): void {
    this.#json(`${result.uuid}-result.json`, result);
  }
  writeGroup(...[result]: Parameters<Writer["writeGroup"]>): void {
    this.#json(`${result.uuid}-container.json`, result);
  }
  writeAttachment(...[name, content]: Parameters<Writer["writeAttachment"]>): void {
    this.#guard(() => publish(this.#path(name), (fd) => writeAll(fd, content)));
  }
  writeAttachmentFromPath(...[name, from]: Parameters<Writer["writeAttachmentFromPath"]>): void {
    this.#guard(() => publish(this.#path(name), (fd) => copyInto(fd, from)));
  }
  writeEnvironmentInfo(...a: Parameters<Writer["writeEnvironmentInfo"]>): void {
    this.#guard(() => this.#inner.writeEnvironmentInfo(...a));
  }
  writeCategoriesDefinitions(...a: Parameters<Writer["writeCategoriesDefinitions"]>): void {
    this.#guard(() => this.#inner.writeCategoriesDefinitions(...a));
  }
  writeGlobals(...a: Parameters<Writer["writeGlobals"]>): void {
    this.#guard(() => this.#inner.writeGlobals(...a));
  }
}
