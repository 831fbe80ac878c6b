// The Allure results writer of a run: allure-js-commons' own FileSystemWriter, wrapped so that
// a write that fails (a full disk under --out, a folder made read-only) never throws into
// mocha's event loop. A throw there leaves mocha's run without its end, so the run would never
// reach its teardowns; here the first error is kept, later writes are skipped (the folder is
// not usable), and the harness reports it as a broken check naming the folder.
import { FileSystemWriter, type Writer } from "allure-js-commons/sdk/reporter";

export class GuardedWriter implements Writer {
  readonly #inner: Writer;
  /** Errors of the writes that failed, first one first. */
  readonly errors: unknown[] = [];

  constructor(resultsDir: string) {
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

  writeResult(...a: Parameters<Writer["writeResult"]>): void {
    this.#guard(() => this.#inner.writeResult(...a));
  }
  writeGroup(...a: Parameters<Writer["writeGroup"]>): void {
    this.#guard(() => this.#inner.writeGroup(...a));
  }
  writeAttachment(...a: Parameters<Writer["writeAttachment"]>): void {
    this.#guard(() => this.#inner.writeAttachment(...a));
  }
  writeAttachmentFromPath(...a: Parameters<Writer["writeAttachmentFromPath"]>): void {
    this.#guard(() => this.#inner.writeAttachmentFromPath(...a));
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
