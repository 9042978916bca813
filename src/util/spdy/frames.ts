/**
 * SPDY/3 framing (draft 3 §2.2): every frame is an 8-byte header and a payload of at most
 * 2^24-1 bytes. Control frames start with the control bit, the version (3) and a type; data
 * frames with a 31-bit stream id. Payload parsing of each control type lives in the session;
 * this file only splits a byte stream into frames and builds frames.
 */

export const SPDY_VERSION = 3;
export const MAX_FRAME_PAYLOAD = 0xffffff;

export const FrameType = {
  SynStream: 1,
  SynReply: 2,
  RstStream: 3,
  Settings: 4,
  Ping: 6,
  GoAway: 7,
  Headers: 8,
  WindowUpdate: 9,
} as const;

export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

/** RST_STREAM status codes used here. */
export const RstStatus = { ProtocolError: 1, InvalidStream: 2, RefusedStream: 3, Cancel: 5, InternalError: 6 } as const;

export type Frame =
  | { readonly kind: 'data'; readonly streamId: number; readonly flags: number; readonly data: Buffer }
  | { readonly kind: 'control'; readonly type: number; readonly flags: number; readonly payload: Buffer };

export class SpdyProtocolError extends Error {}

/** Splits incoming bytes into frames; keeps a partial frame until the rest arrives. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Frame[] = [];
    let at = 0;
    while (this.pending.length - at >= 8) {
      const len = this.pending.readUIntBE(at + 5, 3);
      if (this.pending.length - at < 8 + len) break;
      const flags = this.pending[at + 4]!;
      const payload = this.pending.subarray(at + 8, at + 8 + len);
      const first = this.pending.readUInt32BE(at);
      if (first & 0x80000000) {
        const version = (first >>> 16) & 0x7fff;
        if (version !== SPDY_VERSION) throw new SpdyProtocolError(`unsupported SPDY version ${version}`);
        frames.push({ kind: 'control', type: first & 0xffff, flags, payload: Buffer.from(payload) });
      } else {
        frames.push({ kind: 'data', streamId: first & 0x7fffffff, flags, data: Buffer.from(payload) });
      }
      at += 8 + len;
    }
    this.pending = at === this.pending.length ? Buffer.alloc(0) : this.pending.subarray(at);
    return frames;
  }
}

function header(first: number, flags: number, length: number): Buffer {
  if (length > MAX_FRAME_PAYLOAD) throw new SpdyProtocolError(`frame payload of ${length} bytes is too large`);
  const h = Buffer.alloc(8);
  h.writeUInt32BE(first >>> 0, 0);
  h[4] = flags;
  h.writeUIntBE(length, 5, 3);
  return h;
}

export function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  return Buffer.concat([header((0x8000 | SPDY_VERSION) * 0x10000 + type, flags, payload.length), payload]);
}

export function dataFrame(streamId: number, flags: number, data: Buffer): Buffer {
  return Buffer.concat([header(streamId & 0x7fffffff, flags, data.length), data]);
}

/** 32-bit big-endian words, the building block of control payloads. */
export function words(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
}
