/**
 * Watch responses as an async iterable of events: JSON (one event object per line) or
 * protobuf (length-prefixed WatchEvent frames), chosen by the response Content-Type. The
 * iteration ends when the server closes the stream; ERROR events are yielded as they come
 * (the caller decides, e.g. a reflector relists on code 410).
 */
import type { Readable } from 'node:stream';
import { mediaTypeOf } from '../api/codec/body.js';
import { PROTOBUF_MEDIA_TYPE } from '../api/codec/protobuf.js';
import { WatchFrameDecoder } from '../api/codec/watch-frame.js';
import type { KubeObject } from '../api/resources/types.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

const MAX_JSON_LINE = 64 * 1024 * 1024;

export async function* decodeWatchBody(contentType: string | undefined, body: Readable): AsyncGenerator<WatchEvent> {
  if (mediaTypeOf(contentType) === PROTOBUF_MEDIA_TYPE) {
    const d = new WatchFrameDecoder();
    for await (const c of body) {
      for (const e of d.push(c as Buffer)) yield { type: e.type as WatchEventType, object: e.object };
    }
    if (!d.idle) throw new Error('watch stream ended inside a protobuf frame');
    return;
  }
  let pending = '';
  for await (const c of body) {
    pending += (c as Buffer).toString('utf8');
    if (pending.length > MAX_JSON_LINE) throw new Error('watch event line exceeds the size limit');
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      if (line) yield parseJsonEvent(line);
    }
  }
  if (pending.trim()) yield parseJsonEvent(pending.trim());
}

function parseJsonEvent(line: string): WatchEvent {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    throw new Error(`malformed watch event: ${(e as Error).message}`);
  }
  const ev = v as { type?: unknown; object?: unknown };
  if (typeof ev.type !== 'string' || typeof ev.object !== 'object' || ev.object === null) throw new Error('malformed watch event: missing type or object');
  return { type: ev.type as WatchEventType, object: ev.object as KubeObject };
}
