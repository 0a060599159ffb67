/**
 * An append-only log file that never blocks its writers and survives rotation.
 *
 * Lines are queued and written in batches on a later tick. Before each batch the path is checked
 * against the open descriptor: when logrotate (or an operator) moved or deleted the file, a new
 * one is created at the path and the old descriptor closed, so the rotated file keeps exactly the
 * lines written before the move. `reopen()` (wired to SIGHUP) forces the same.
 */
import { close, fstat, fstatSync, open, openSync, type Stats, stat, write } from "node:fs";
import { SvcError } from "../core/errors.ts";

// Promises over the descriptor calls, written out: node:util's promisify cost every start
// about 1.5 ms of loading before the API could listen.
type Callback<T> = (error: NodeJS.ErrnoException | null, value: T) => void;
const promised = <T>(call: (done: Callback<T>) => void): Promise<T> =>
  new Promise((resolve, reject) => call((error, value) => (error ? reject(error) : resolve(value))));
const openAsync = (path: string, flags: string, mode: number) =>
  promised<number>((done) => open(path, flags, mode, done));
const closeAsync = (fd: number) => promised<void>((done) => close(fd, (error) => done(error, undefined)));
const writeAsync = (fd: number, buffer: Buffer, offset: number, length: number) =>
  promised<number>((done) =>
    write(fd, buffer, offset, length, null, (error, bytesWritten) => done(error, bytesWritten)),
  );
const statAsync = (path: string) => promised<Stats>((done) => stat(path, done));
const fstatAsync = (fd: number) => promised<Stats>((done) => fstat(fd, done));

/** Created files are readable by their owner only: entries can name hosts and containers. */
const FILE_MODE = 0o600;
/** A stalled disk must not eat the memory of a small host: past this many queued lines, new ones are dropped (and counted). */
const MAX_PENDING_LINES = 50_000;
/**
 * Lines are gathered this long before a batch is written: under load (an access log at tens of
 * thousands of requests per second) each batch costs a stat and a write on the thread pool, and
 * per-tick batches of a few lines made the access log cost a third of the API's throughput.
 */
const BATCH_MS = 10;

/** Which file a descriptor or path refers to. */
interface FileIdentity {
  dev: number;
  ino: number;
}

export interface LogFileOptions {
  /** Called when the file cannot be written or reopened (once per failure streak). */
  onError?: (message: string, error: unknown) => void;
}

export class LogFile {
  readonly path: string;
  private fd: number;
  /** the identity of the file behind `fd`, taken when it was opened */
  private held: FileIdentity;
  private pending: string[] = [];
  private dropped = 0;
  private writing: Promise<void> | null = null;
  private scheduled = false;
  private reopenRequested = false;
  private failing = false;
  private closed = false;
  private readonly onError: (message: string, error: unknown) => void;

  /** Opens (or creates, mode 0600) the file now, so a bad path is a startup error. */
  constructor(path: string, options: LogFileOptions = {}) {
    this.path = path;
    this.onError = options.onError ?? (() => {});
    try {
      this.fd = openSync(path, "a", FILE_MODE);
      this.held = identity(fstatSync(this.fd));
    } catch (error) {
      throw new SvcError("startup", `cannot open log file ${path}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Queues one line (a newline is added). Never throws, never waits. */
  write(line: string): void {
    if (this.closed) return;
    if (this.pending.length >= MAX_PENDING_LINES) {
      this.dropped++;
      return;
    }
    // Kept without its newline: joining flat strings is a copy, joining `${line}\n` ropes was not.
    this.pending.push(line.endsWith("\n") ? line.slice(0, -1) : line);
    this.schedule();
  }

  /** Resolves when every line queued so far is written. */
  async flush(): Promise<void> {
    // the batch being written, then the lines queued meanwhile
    do await this.writeBatch();
    while (this.pending.length > 0 && !this.closed);
  }

  /** Writes to a freshly opened file at the path from the next batch on (SIGHUP). */
  async reopen(): Promise<void> {
    this.reopenRequested = true;
    await this.flush();
    // a batch already under way when the request came may have checked the path before it
    if (this.reopenRequested) await this.writeBatch();
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.closed) return;
    this.closed = true;
    // nothing lost: every line was flushed above; a descriptor that will not close is gone with the process
    await closeAsync(this.fd).catch(() => {});
  }

  /**
   * One batch every BATCH_MS at most, also under steady load: writing again as soon as a write
   * returned made a busy access log stat and write its file for every few lines.
   */
  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      void this.writeBatch().then(() => {
        if (this.pending.length > 0) this.schedule();
      });
    }, BATCH_MS);
  }

  /** Writes what is queued (one stat, one write), or joins the batch under way. */
  private writeBatch(): Promise<void> {
    this.writing ??= this.writeQueued().finally(() => {
      this.writing = null;
    });
    return this.writing;
  }

  private async writeQueued(): Promise<void> {
    if (this.pending.length > 0 && !this.closed) {
      const batch = `${this.pending.join("\n")}\n`;
      this.pending = [];
      try {
        await this.followRotation();
        await writeFully(this.fd, Buffer.from(batch));
        this.recovered();
      } catch (error) {
        this.failed(`cannot write log file ${this.path}`, error);
      }
    }
    if (this.reopenRequested && !this.closed)
      await this.followRotation().catch((error) => this.failed(`cannot reopen log file ${this.path}`, error));
  }

  /** Reopens when asked to, or when the path no longer names the file we hold open. */
  private async followRotation(): Promise<void> {
    if (!this.reopenRequested && (await this.pathStillOurs())) return;
    const fresh = await openAsync(this.path, "a", FILE_MODE);
    const held = identity(await fstatAsync(fresh));
    const old = this.fd;
    this.fd = fresh;
    this.held = held;
    this.reopenRequested = false;
    // nothing lost: the old descriptor was flushed and replaced; a failed close leaks one descriptor, writes go to the new one
    await closeAsync(old).catch(() => {});
  }

  private async pathStillOurs(): Promise<boolean> {
    try {
      const onDisk = await statAsync(this.path);
      return onDisk.ino === this.held.ino && onDisk.dev === this.held.dev;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw error;
    }
  }

  private failed(message: string, error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.onError(message, error);
  }

  private recovered(): void {
    this.failing = false;
    if (this.dropped > 0) {
      this.onError(`log file ${this.path}: ${this.dropped} lines were dropped while writing was stalled`, null);
      this.dropped = 0;
    }
  }
}

function identity(stats: { dev: number; ino: number }): FileIdentity {
  return { dev: stats.dev, ino: stats.ino };
}

async function writeFully(fd: number, buffer: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const bytesWritten = await writeAsync(fd, buffer, offset, buffer.length - offset);
    if (bytesWritten <= 0) throw new Error("short write");
    offset += bytesWritten;
  }
}
