/**
 * Reads container logs in the CRI format the runtime writes, one record per line:
 *   `<RFC 3339 nano timestamp> <stdout|stderr> <P|F> <message>`
 * A `P` record is part of a line that continues in the next record of the same stream (lines
 * longer than the runtime's limit, or output without a trailing newline); `F` ends it.
 * The reader joins the parts, strips the prefixes, and supports what `kubectl logs` asks of the
 * node: tail N lines, since a time, timestamps, a byte limit, a single stream, and follow (which
 * survives rotation: the file renamed away and a fresh one created at the same path).
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export type LogStream = 'stdout' | 'stderr';

export interface CriLogRecord {
  /** The timestamp exactly as written (RFC 3339 with up to 9 fraction digits). */
  readonly timestamp: string;
  /** The timestamp in ms since the epoch (fraction below 1 ms dropped). */
  readonly timeMs: number;
  readonly stream: LogStream;
  readonly partial: boolean;
  readonly message: Buffer;
}

export interface ReadCriLogOptions {
  /** Only the last N lines (after the stream and since filters); undefined/negative = all. */
  readonly tail?: number;
  /** Only lines whose first record is at or after this time (ms since the epoch). */
  readonly sinceMs?: number;
  /** Prefix every line with its recorded timestamp and a space. */
  readonly timestamps?: boolean;
  readonly stream?: LogStream | 'all';
  /** Stop after this many bytes of output. */
  readonly limitBytes?: number;
  /** Keep reading as the file grows, until the signal aborts or isActive() turns false. */
  readonly follow?: boolean;
  /** Polled while following; when it returns false the reader drains the file and ends. */
  readonly isActive?: () => boolean | Promise<boolean>;
  readonly pollIntervalMs?: number;
  readonly signal?: AbortSignal;
}

const SPACE = 0x20;
const NEWLINE = 0x0a;

/** Parses an RFC 3339 UTC/offset timestamp with any fraction length into ms. NaN if invalid. */
export function parseRfc3339Ms(ts: string): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(ts);
  if (!m) return NaN;
  const ms = (m[2] ?? '').slice(0, 3).padEnd(3, '0');
  return Date.parse(`${m[1]}.${ms}${m[3]}`);
}

/** One CRI log line (without its newline) into a record, or null when it is malformed. */
export function parseCriLogLine(line: Buffer): CriLogRecord | null {
  const a = line.indexOf(SPACE);
  if (a <= 0) return null;
  const b = line.indexOf(SPACE, a + 1);
  if (b < 0) return null;
  const stream = line.toString('latin1', a + 1, b);
  if (stream !== 'stdout' && stream !== 'stderr') return null;
  const tag = line.toString('latin1', b + 1, b + 2);
  if (tag !== 'P' && tag !== 'F') return null;
  // Older writers had no tag; we only accept tagged records. The message may be empty.
  const after = line.length > b + 2 && line[b + 2] === SPACE ? b + 3 : b + 2;
  const timestamp = line.toString('latin1', 0, a);
  const timeMs = parseRfc3339Ms(timestamp);
  if (Number.isNaN(timeMs)) return null;
  return { timestamp, timeMs, stream, partial: tag === 'P', message: line.subarray(after) };
}

/** Formats one record the way the runtime writes it (for writers such as the fake runtime). */
export function formatCriLogRecord(time: Date | string, stream: LogStream, partial: boolean, message: Buffer | string): Buffer {
  const ts = typeof time === 'string' ? time : time.toISOString();
  return Buffer.concat([Buffer.from(`${ts} ${stream} ${partial ? 'P' : 'F'} `), Buffer.from(message), Buffer.from('\n')]);
}

interface JoinedLine { readonly timestamp: string; readonly timeMs: number; readonly stream: LogStream; readonly data: Buffer; readonly complete: boolean }

/** Splits raw bytes into lines and joins P/F records into whole lines, per stream. */
class LineAssembler {
  private rest: Buffer = Buffer.alloc(0);
  private readonly pending = new Map<LogStream, { first: CriLogRecord; parts: Buffer[] }>();

  push(chunk: Buffer): JoinedLine[] {
    const buf = this.rest.length ? Buffer.concat([this.rest, chunk]) : chunk;
    const out: JoinedLine[] = [];
    let start = 0;
    for (let nl = buf.indexOf(NEWLINE, start); nl >= 0; nl = buf.indexOf(NEWLINE, start)) {
      const rec = parseCriLogLine(buf.subarray(start, nl));
      start = nl + 1;
      if (!rec) continue;
      const p = this.pending.get(rec.stream);
      if (rec.partial) {
        if (p) p.parts.push(Buffer.from(rec.message));
        else this.pending.set(rec.stream, { first: rec, parts: [Buffer.from(rec.message)] });
        continue;
      }
      const first = p?.first ?? rec;
      const data = p ? Buffer.concat([...p.parts, rec.message]) : Buffer.from(rec.message);
      this.pending.delete(rec.stream);
      out.push({ timestamp: first.timestamp, timeMs: first.timeMs, stream: rec.stream, data, complete: true });
    }
    this.rest = Buffer.from(buf.subarray(start));
    return out;
  }

  /** Lines still open at the end (trailing P records), emitted without a newline. */
  flushPartial(): JoinedLine[] {
    const out: JoinedLine[] = [];
    for (const [stream, p] of this.pending) {
      out.push({ timestamp: p.first.timestamp, timeMs: p.first.timeMs, stream, data: Buffer.concat(p.parts), complete: false });
    }
    this.pending.clear();
    return out;
  }
}

async function readFrom(fh: FileHandle, offset: number): Promise<{ data: Buffer; offset: number }> {
  const chunks: Buffer[] = [];
  for (;;) {
    const buf = Buffer.allocUnsafe(256 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
    if (bytesRead === 0) break;
    chunks.push(buf.subarray(0, bytesRead));
    offset += bytesRead;
  }
  return { data: Buffer.concat(chunks), offset };
}

/**
 * Yields output chunks (whole lines with their newline; a trailing partial line without one).
 * Without `follow` it ends at the end of the file.
 */
export async function* readCriLog(path: string, opts: ReadCriLogOptions = {}): AsyncGenerator<Buffer> {
  const wantStream = opts.stream ?? 'all';
  const since = opts.sinceMs ?? -Infinity;
  let budget = opts.limitBytes !== undefined && opts.limitBytes > 0 ? opts.limitBytes : Infinity;
  const keep = (l: JoinedLine): boolean => (wantStream === 'all' || l.stream === wantStream) && l.timeMs >= since;
  const render = (l: JoinedLine): Buffer => Buffer.concat([
    opts.timestamps ? Buffer.from(`${l.timestamp} `) : Buffer.alloc(0), l.data, l.complete ? Buffer.from('\n') : Buffer.alloc(0),
  ]);
  // Returns false once the byte budget is spent.
  function* emit(lines: JoinedLine[]): Generator<Buffer, boolean> {
    for (const l of lines) {
      if (!keep(l)) continue;
      let out = render(l);
      if (out.length >= budget) { out = out.subarray(0, budget); budget = 0; yield out; return false; }
      budget -= out.length;
      yield out;
    }
    return true;
  }

  const asm = new LineAssembler();
  let fh = await open(path, 'r');
  let ino = (await fh.stat()).ino;
  let offset = 0;
  try {
    const first = await readFrom(fh, offset);
    offset = first.offset;
    let lines = asm.push(first.data);
    if (opts.tail !== undefined && opts.tail >= 0) {
      const kept = lines.filter(keep);
      lines = opts.tail === 0 ? [] : kept.slice(-opts.tail);
    }
    if (!(yield* emit(lines))) return;
    if (!opts.follow) {
      yield* emit(asm.flushPartial());
      return;
    }
    const interval = opts.pollIntervalMs ?? 100;
    for (;;) {
      if (opts.signal?.aborted) return;
      const active = opts.isActive ? await opts.isActive() : true;
      // Rotation: a new file at the path. Drain the old one, then switch.
      let rotated = false;
      try {
        const st = await stat(path);
        rotated = st.ino !== ino;
      } catch { /* renamed away and not yet recreated: keep draining the old handle */ }
      const more = await readFrom(fh, offset);
      offset = more.offset;
      if (!(yield* emit(asm.push(more.data)))) return;
      if (rotated) {
        await fh.close();
        fh = await open(path, 'r');
        ino = (await fh.stat()).ino;
        offset = 0;
        continue;
      }
      if (!active) {
        yield* emit(asm.flushPartial());
        return;
      }
      try {
        await sleep(interval, undefined, { signal: opts.signal });
      } catch {
        return; // aborted
      }
    }
  } finally {
    await fh.close().catch(() => undefined);
  }
}
