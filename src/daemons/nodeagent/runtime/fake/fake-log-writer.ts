/**
 * Writes a fake container's output to its log file in the CRI format, the way containerd does:
 * one record per line, lines longer than `maxLineBytes` split into `P` records ending with an
 * `F`, and output without a final newline written as `P`.
 * Contract: writes are applied in call order (one promise chain per file); `flush()` resolves
 * once everything written so far is on disk. Write errors are logged, never thrown at callers.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { formatCriLogRecord, type LogStream } from '../logs/cri-log-reader.js';

export const DEFAULT_MAX_LOG_LINE_BYTES = 16 * 1024;

export class FakeLogWriter {
  private chain: Promise<void>;

  constructor(readonly path: string, private readonly logger: Logger, private readonly maxLineBytes = DEFAULT_MAX_LOG_LINE_BYTES) {
    // Create the file (and its directories) at once, as the runtime does when it starts a container.
    this.chain = mkdir(dirname(path), { recursive: true })
      .then(() => appendFile(path, ''))
      .catch((e: unknown) => { this.logger.warn({ err: e, path }, 'fake runtime: cannot create log file'); });
  }

  /** Appends `text` from `stream`; a trailing piece without a newline becomes a P record. */
  write(stream: LogStream, text: string | Buffer, now = new Date()): void {
    const data = Buffer.from(text);
    if (data.length === 0) return;
    const records: Buffer[] = [];
    let start = 0;
    while (start < data.length) {
      const nl = data.indexOf(0x0a, start);
      const end = nl < 0 ? data.length : nl;
      let pos = start;
      // Chunks of a long line are P; the last piece is F only if a newline ended it.
      while (end - pos > this.maxLineBytes) {
        records.push(formatCriLogRecord(now, stream, true, data.subarray(pos, pos + this.maxLineBytes)));
        pos += this.maxLineBytes;
      }
      records.push(formatCriLogRecord(now, stream, nl < 0, data.subarray(pos, end)));
      start = nl < 0 ? data.length : nl + 1;
    }
    const chunk = Buffer.concat(records);
    this.chain = this.chain
      .then(() => appendFile(this.path, chunk))
      .catch((e: unknown) => { this.logger.warn({ err: e, path: this.path }, 'fake runtime: log write failed'); });
  }

  /** Resolves when every earlier write has reached the file. */
  flush(): Promise<void> {
    return this.chain;
  }
}
