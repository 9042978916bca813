/**
 * Watch event framing.
 *   protobuf: 4-byte big-endian length + a bare meta.v1 WatchEvent{type=1, object=2 RawExtension
 *             {raw=1: the enveloped object, "k8s\0" included}};
 *   JSON:     one {"type":..,"object":..} object per line.
 * Encoders are pure so that one event is serialized once per content type and shared by
 * every watcher.
 */
import protobuf from 'protobufjs/minimal.js';
import { errors } from '../meta/status.js';
import type { KubeObject } from '../resources/types.js';
import { decodeProtobuf, encodeProtobuf } from './protobuf.js';

export interface WatchEventFrame {
  type: string;
  object: KubeObject;
}

/** Largest frame the decoder accepts (Kubernetes objects are at most a few MiB). */
export const MAX_WATCH_FRAME_BYTES = 64 * 1024 * 1024;

export function encodeWatchEventProtobuf(type: string, obj: KubeObject): Buffer {
  return frameWatchEvent(type, encodeProtobuf(obj));
}

/** Frames an already enveloped protobuf object (for callers that cache the object bytes). */
export function frameWatchEvent(type: string, envelopedObject: Uint8Array): Buffer {
  const w = protobuf.Writer.create();
  w.uint32(0).uint32(0).uint32(0).uint32(0); // 4 placeholder bytes for the length prefix
  w.uint32(0x0a).string(type);
  w.uint32(0x12).fork();
  w.uint32(0x0a).bytes(envelopedObject);
  w.ldelim();
  const out = w.finish();
  const buf = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  buf.writeUInt32BE(buf.length - 4, 0);
  return buf;
}

export function encodeWatchEventJson(type: string, obj: KubeObject): Buffer {
  return Buffer.from(`${JSON.stringify({ type, object: obj })}\n`, 'utf8');
}

/** Decodes one bare WatchEvent message (no length prefix). */
export function decodeWatchEvent(bytes: Uint8Array): WatchEventFrame {
  let type = '';
  let raw: Uint8Array = new Uint8Array(0);
  try {
    const r = protobuf.Reader.create(bytes);
    while (r.pos < r.len) {
      const t = r.uint32();
      if (t === 0x0a) type = r.string();
      else if (t === 0x12) {
        const end = r.uint32() + r.pos;
        while (r.pos < end) {
          const tt = r.uint32();
          if (tt === 0x0a) raw = r.bytes();
          else r.skipType(tt & 7);
        }
      } else r.skipType(t & 7);
    }
  } catch (e) {
    throw errors.badRequest(`malformed protobuf watch event: ${(e as Error).message}`);
  }
  return { type, object: decodeProtobuf(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)) };
}

/** Splits a protobuf watch stream, fed in arbitrary chunks, into events. */
export class WatchFrameDecoder {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /** Adds a chunk; returns the events completed by it, in order. */
  push(chunk: Uint8Array): WatchEventFrame[] {
    this.pending.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.pendingBytes += chunk.byteLength;
    const events: WatchEventFrame[] = [];
    while (this.pendingBytes >= 4) {
      let buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
      const len = buf.readUInt32BE(0);
      if (len > MAX_WATCH_FRAME_BYTES) throw errors.badRequest(`watch frame of ${len} bytes exceeds the limit of ${MAX_WATCH_FRAME_BYTES}`);
      if (buf.length < 4 + len) { this.pending = [buf]; break; }
      events.push(decodeWatchEvent(buf.subarray(4, 4 + len)));
      buf = buf.subarray(4 + len);
      this.pending = buf.length ? [buf] : [];
      this.pendingBytes = buf.length;
    }
    return events;
  }

  /** True when the stream ended between frames. */
  get idle(): boolean {
    return this.pendingBytes === 0;
  }
}

/** Decodes a whole protobuf watch stream given as an async iterable of chunks. */
export async function* decodeWatchStream(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<WatchEventFrame> {
  const d = new WatchFrameDecoder();
  for await (const c of chunks) yield* d.push(c);
  if (!d.idle) throw errors.badRequest('watch stream ended inside a frame');
}
