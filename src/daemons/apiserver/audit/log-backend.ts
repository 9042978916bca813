/**
 * The log backend (`--audit-log-path`): events as lines in a file, or on standard output for
 * `-`. Writes are synchronous, a write call per 64 KiB of lines (line-arena.ts): in batch mode
 * a batch's lines, in blocking mode the json lines of one turn of the event loop (group commit),
 * each request waiting for the write holding its own events (legacy lines: one write call per
 * event).
 *
 * Rotation as Kubernetes' (lumberjack): before a write that would take the file past
 * `--audit-log-maxsize` MB (0: lumberjack's default, 100 MB), the file is renamed `<name>-<UTC time>.<ext>` (time as
 * 2006-01-02T15-04-05.000) and a new one started; then backups beyond `--audit-log-maxbackup`
 * and those older than `--audit-log-maxage` days, by the time in their names, are removed.
 */
import { closeSync, fstatSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { Logger } from 'pino';
import type { AuditEvent } from './event.js';
import { formatLine, type AuditBackend, type LogFormat } from './format.js';
import { LineArena } from './line-arena.js';

export interface RotationOptions {
  /** Bytes at which the file rotates; 0 never. */
  maxBytes: number;
  /** Backups kept; 0 keeps all. */
  maxBackups: number;
  /** Days a backup is kept; 0 keeps them whatever their age. */
  maxAgeDays: number;
}

export interface LineSink {
  write(text: string): void;
  /** The first `length` bytes of `buf` (which the caller reuses once this returns). */
  writeBytes(buf: Buffer, length: number): void;
  close(): void;
}

/** A backup name's time: `2006-01-02T15-04-05.000` (UTC). */
function backupStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/:/g, '-').replace('Z', '');
}

function parseStamp(s: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(s);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`);
  return Number.isNaN(t) ? undefined : t;
}

export class RotatingFile implements LineSink {
  private fd: number;
  private size: number;
  private readonly dir: string;
  private readonly prefix: string;
  private readonly ext: string;

  constructor(private readonly path: string, private readonly rot: RotationOptions, private readonly now: () => number = Date.now) {
    this.dir = dirname(path);
    this.ext = extname(path);
    this.prefix = `${basename(path, this.ext)}-`;
    this.fd = openSync(path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  write(text: string): void {
    const buf = Buffer.from(text);
    this.writeBytes(buf, buf.length);
  }

  writeBytes(buf: Buffer, length: number): void {
    if (this.rot.maxBytes > 0 && this.size > 0 && this.size + length > this.rot.maxBytes) this.rotate();
    let off = 0;
    while (off < length) off += writeSync(this.fd, buf, off, length - off);
    this.size += length;
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Backup files of this log, newest first. */
  backups(): { name: string; time: number }[] {
    const out: { name: string; time: number }[] = [];
    for (const f of readdirSync(this.dir)) {
      if (!f.startsWith(this.prefix) || !f.endsWith(this.ext)) continue;
      const t = parseStamp(f.slice(this.prefix.length, f.length - this.ext.length));
      if (t !== undefined) out.push({ name: f, time: t });
    }
    return out.sort((a, b) => b.time - a.time);
  }

  private rotate(): void {
    closeSync(this.fd);
    let stamp = this.now();
    // Two rotations within one millisecond must not overwrite a backup.
    while (this.backups().some((b) => b.time === stamp)) stamp++;
    renameSync(this.path, join(this.dir, `${this.prefix}${backupStamp(stamp)}${this.ext}`));
    this.fd = openSync(this.path, 'a', 0o600);
    this.size = 0;
    this.prune();
  }

  private prune(): void {
    const { maxBackups, maxAgeDays } = this.rot;
    if (!maxBackups && !maxAgeDays) return;
    const cutoff = maxAgeDays > 0 ? this.now() - maxAgeDays * 24 * 3600_000 : -Infinity;
    this.backups().forEach((b, i) => {
      if ((maxBackups > 0 && i >= maxBackups) || b.time < cutoff) {
        try { unlinkSync(join(this.dir, b.name)); } catch { /* already gone */ }
      }
    });
  }
}

export class StdoutSink implements LineSink {
  write(text: string): void { process.stdout.write(text); }
  writeBytes(buf: Buffer, length: number): void { process.stdout.write(Buffer.from(buf.subarray(0, length))); }
  close(): void { /* standard output stays open */ }
}

export class LogBackend implements AuditBackend {
  readonly name = 'log';
  /** json format: lines as the record writes them (legacy lines need the Event). */
  readonly processLine: ((line: string, ascii: boolean) => void | Promise<void>) | undefined;
  /**
   * Lines' bytes until written: batch mode's buffered lines (prepare and prepareLine encode,
   * processPrepared writes) and blocking mode's group, written a chunk per call.
   */
  private readonly arena = new LineArena();
  /** Group commit: the lines of this turn of the event loop, written together, and who waits for them. */
  private group: { lines: string[]; written: Promise<void>; done: () => void } | undefined;

  /**
   * `onError` counts events that could not be written (apiserver_audit_error_total{plugin="log"}).
   * `groupCommit` (blocking mode): a json line's promise settles once it is written, with the
   * other lines of the same turn of the event loop in one write: each request still waits for
   * its own events, but 50 requests in flight pay one write call instead of a hundred.
   */
  constructor(private readonly sink: LineSink, private readonly format: LogFormat, private readonly log: Logger, private readonly onError: (n: number) => void,
    groupCommit = false) {
    this.processLine = format !== 'json' ? undefined : groupCommit ? (line) => this.commit(line) : (line) => this.writeLines([line]);
  }

  private commit(line: string): Promise<void> {
    let g = this.group;
    if (!g) {
      let done!: () => void;
      const written = new Promise<void>((resolve) => { done = resolve; });
      g = this.group = { lines: [], written, done };
      setImmediate(() => this.writeGroup());
    }
    g.lines.push(line);
    return g.written;
  }

  private writeGroup(): void {
    const g = this.group;
    if (!g) return;
    this.group = undefined;
    this.writeLines(g.lines);
    g.done();
  }

  process(events: AuditEvent[]): void {
    let text = '';
    for (const ev of events) text += formatLine(ev, this.format);
    this.write(text, events.length);
  }

  /** Batch mode: the event's line encoded now; what the buffer keeps is its byte count. */
  prepare(ev: AuditEvent): number {
    return this.arena.add(formatLine(ev, this.format));
  }

  /** prepare for a json line the record built. */
  prepareLine(line: string, ascii: boolean): number {
    return this.arena.add(line, ascii);
  }

  /** Writes a batch of prepared lines (their byte counts, in the order they were prepared). */
  processPrepared(sizes: unknown[]): void {
    let bytes = 0;
    for (const n of sizes) bytes += n as number;
    this.writeArena(bytes, sizes.length);
  }

  private writeLines(lines: readonly string[]): void {
    let bytes = 0;
    for (const l of lines) bytes += this.arena.add(l);
    this.writeArena(bytes, lines.length);
  }

  /** Writes the oldest `bytes` of the arena (`count` events): a failure counts them and is logged, never thrown. */
  private writeArena(bytes: number, count: number): void {
    try {
      this.arena.take(bytes, (piece) => this.sink.writeBytes(piece, piece.length));
    } catch (e) {
      this.onError(count);
      this.log.error({ err: (e as Error).message, events: count }, "Error in audit plugin 'log'");
    }
  }

  private write(text: string, count: number): void {
    try {
      this.sink.write(text);
    } catch (e) {
      this.onError(count);
      this.log.error({ err: (e as Error).message, events: count }, "Error in audit plugin 'log'");
    }
  }

  async shutdown(): Promise<void> {
    this.writeGroup();
    try { this.sink.close(); } catch { /* closing is best effort */ }
  }
}
