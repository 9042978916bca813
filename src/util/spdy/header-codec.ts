/**
 * SPDY/3 name/value header blocks (draft 3 §2.6.10): a 32-bit pair count, then per pair a
 * 32-bit length and the lower-case name, a 32-bit length and the value (several values of one
 * name joined by NUL). Blocks are compressed with ONE zlib stream per direction for the whole
 * session, seeded with the SPDY dictionary, each block ending with a sync flush.
 *
 * Contract: compress()/decompress() calls are applied in call order (a promise chain), so the
 * shared zlib state matches the order blocks are written to / read from the wire. Callers must
 * write a compressed block before compressing the next one (the session does both in one step).
 */
import * as zlib from 'node:zlib';
import { SPDY3_HEADER_DICTIONARY } from './dictionary.js';
import { SpdyProtocolError } from './frames.js';

export type SpdyHeaders = Record<string, string | string[]>;

/** The uncompressed block for `headers` (names lower-cased, arrays joined with NUL). */
export function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length);
  parts.push(count);
  for (const [name, value] of entries) {
    const n = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from(Array.isArray(value) ? value.join('\0') : value, 'utf8');
    const nl = Buffer.alloc(4);
    nl.writeUInt32BE(n.length);
    const vl = Buffer.alloc(4);
    vl.writeUInt32BE(v.length);
    parts.push(nl, n, vl, v);
  }
  return Buffer.concat(parts);
}

/** Parses an uncompressed block; every value is returned as a list. */
export function decodeHeaderBlock(block: Buffer): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let at = 0;
  const need = (n: number): void => { if (at + n > block.length) throw new SpdyProtocolError('truncated header block'); };
  need(4);
  const count = block.readUInt32BE(at);
  at += 4;
  for (let i = 0; i < count; i++) {
    need(4);
    const nl = block.readUInt32BE(at); at += 4;
    need(nl);
    const name = block.toString('utf8', at, at + nl); at += nl;
    need(4);
    const vl = block.readUInt32BE(at); at += 4;
    need(vl);
    const value = block.toString('utf8', at, at + vl); at += vl;
    (out[name] ??= []).push(...value.split('\0'));
  }
  return out;
}

/** Runs one zlib stream block by block, each block sync-flushed. */
class BlockZlib {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly z: zlib.Deflate | zlib.Inflate) {
    z.on('error', () => { /* reported through the pending run() */ });
  }

  run(input: Buffer): Promise<Buffer> {
    const step = this.tail.then(() => new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const onData = (c: Buffer): void => { chunks.push(c); };
      const onError = (e: Error): void => { cleanup(); reject(new SpdyProtocolError(`header block: ${e.message}`)); };
      const cleanup = (): void => { this.z.off('data', onData); this.z.off('error', onError); };
      this.z.on('data', onData);
      this.z.once('error', onError);
      this.z.write(input);
      this.z.flush(zlib.constants.Z_SYNC_FLUSH, () => { cleanup(); resolve(Buffer.concat(chunks)); });
    }));
    this.tail = step.catch(() => undefined);
    return step;
  }

  close(): void { this.z.close(); }
}

export class HeaderCompressor {
  private readonly z = new BlockZlib(zlib.createDeflate({ dictionary: SPDY3_HEADER_DICTIONARY, level: zlib.constants.Z_BEST_COMPRESSION }));
  compress(headers: SpdyHeaders): Promise<Buffer> { return this.z.run(encodeHeaderBlock(headers)); }
  close(): void { this.z.close(); }
}

export class HeaderDecompressor {
  private readonly z = new BlockZlib(zlib.createInflate({ dictionary: SPDY3_HEADER_DICTIONARY }));
  async decompress(block: Buffer): Promise<Record<string, string[]>> { return decodeHeaderBlock(await this.z.run(block)); }
  close(): void { this.z.close(); }
}
