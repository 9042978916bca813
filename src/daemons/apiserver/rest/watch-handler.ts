/**
 * WATCH over chunked HTTP (one JSON event per line, flushed per event) or WebSocket (one
 * message per event). Events may be wrapped as one-row Tables when the Accept asks for Table.
 * Ends at timeoutSeconds (else a random time in [minRequestTimeout, 2×minRequestTimeout]) even
 * when the client reads slowly (what is still buffered for it is then dropped), on client
 * disconnect, and right after an ERROR event (clients re-list on 410).
 */
import type { WebSocket } from 'ws';
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectEvent } from '../../../storage/object-store-types.js';
import { isResourceVersion } from '../../../storage/resource-version.js';
import { constants, type Http2Stream } from 'node:http2';
import type { ApiResponse } from '../context.js';
import { H2Response } from '../h2-response.js';
import { queryBool } from '../request-info.js';
import { encodeWatchEventProtobuf } from '../../../api/codec/watch-frame.js';
import { messageForObject } from '../../../api/schema/registry.js';
import { negotiateOutput, type OutputFormat } from './negotiate.js';
import { partialObject } from './partial-metadata.js';
import { headerOf, servedApiVersion, toServed, type Scope } from './scope.js';
import { buildMatcher, exactName, watchTrigger } from './selector-dispatch.js';
import { buildTable, parseIncludeObject } from './table.js';
import { goEscape, goOrder } from '../../../api/codec/go-json.js';

export interface WatchSink {
  /**
   * Sends one serialized event. Returns nothing when the transport can take more at once (the
   * common case: no promise per event), else a promise that resolves when it can.
   */
  send(line: Buffer): Promise<void> | void;
  /**
   * Optional synchronous form of send for push delivery: writes the line (always accepted,
   * buffered if need be) and returns false when the transport is full; `onDrain` then reports
   * when it has room again.
   */
  write?(line: Buffer): boolean;
  onDrain?(cb: () => void): void;
  end(): void;
  /**
   * Ends at once, dropping what the transport still holds for a client that reads slowly (the
   * watch's timeout: a back-pressured stream must not outlive it by the time its buffer takes
   * to drain). Without it, end().
   */
  abort?(): void;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

function parseTimeout(s: Scope, minRequestTimeout: number): number {
  const t = s.query.get('timeoutSeconds');
  if (t !== null && t !== '') {
    if (!/^\d+$/.test(t)) throw errors.badRequest(`timeoutSeconds: Invalid value: ${JSON.stringify(t)}: must be a non-negative integer`);
    return Number(t) * 1000;
  }
  const min = Math.max(1, minRequestTimeout);
  return Math.floor((min + Math.random() * min) * 1000);
}

/** JSON lines, or length-framed protobuf WatchEvents when negotiated and the kind has a schema. */
export function watchFormat(s: Scope, allowProtobuf = true): OutputFormat {
  const protobuf = allowProtobuf && messageForObject(servedApiVersion(s), s.def.kind) !== undefined;
  const fmt = negotiateOutput(headerOf(s.req, 'accept'), 'resource', { protobuf, pretty: false });
  if (fmt.mediaType === 'application/yaml') return { ...fmt, mediaType: 'application/json' };
  return fmt;
}

function eventObject(s: Scope, fmt: OutputFormat, ev: ObjectEvent): unknown {
  if (ev.type === 'ERROR') return ev.object;
  if (ev.type === 'BOOKMARK') {
    return { kind: s.def.kind, apiVersion: servedApiVersion(s), metadata: { resourceVersion: ev.object.metadata?.resourceVersion ?? '' } };
  }
  const defForm = s.registry.fromStore(s.def, ev.object);
  const served = toServed(s, defForm);
  if (fmt.target === 'table') {
    return buildTable(s.def, [{ stored: s.registry.tableSource(s.def, defForm), served }], {
      include: parseIncludeObject(s.query.get('includeObject')), metaVersion: fmt.asVersion ?? 'v1',
      resourceVersion: defForm.metadata?.resourceVersion,
    });
  }
  if (fmt.target === 'partial') return partialObject(served, fmt.asVersion);
  return served;
}

/**
 * The key of an event's shared serialization (ObjectEvent.cache) as this watch encodes it, or
 * undefined when the bytes must not be shared. It names everything the bytes depend on besides
 * the event itself: media type, the resource and served version (conversion, kind and
 * apiVersion) and the target (object, or metadata only with its meta version). Table rows are
 * never shared: their cells (AGE) depend on the time they are computed, and a watcher replaying
 * history would otherwise get cells computed long before.
 */
function encodingKey(s: Scope, fmt: OutputFormat): string | undefined {
  if (fmt.target === 'table') return undefined;
  const target = fmt.target === 'partial' ? `partial/${fmt.asVersion ?? 'v1'}` : fmt.target;
  return `${fmt.mediaType}|${s.def.group}|${s.def.plural}|${servedApiVersion(s)}|${target}`;
}

function encodeEvent(s: Scope, fmt: OutputFormat, ev: ObjectEvent, key: string | undefined): Buffer {
  const cache = key === undefined ? undefined : ev.cache;
  const hit = cache?.get(key!);
  if (hit) return hit;
  const pb = fmt.mediaType === 'application/vnd.kubernetes.protobuf';
  const buf = pb ? encodeWatchEventProtobuf(ev.type, eventObject(s, fmt, ev) as KubeObject)
    : Buffer.from(goEscape(JSON.stringify({ type: ev.type, object: goOrder(eventObject(s, fmt, ev)) })) + '\n', 'utf8');
  cache?.set(key!, buf);
  return buf;
}

/**
 * The shared-delivery side of one push watch (ObjectEventConsumer.shared): prepare encodes a
 * live event as every watch with this `key` would, deliver writes the prepared bytes (one event's
 * line, or several joined) to this watch's sink. One object per watcher holding what deliver
 * needs, so the fan-out touches it and the transport only.
 */
class SharedLines {
  /** The watch ended: nothing more is written. */
  done = false;

  constructor(readonly key: string, private readonly s: Scope, private readonly fmt: OutputFormat, private readonly sink: WatchSink) {}

  prepare(ev: ObjectEvent): Buffer { return encodeEvent(this.s, this.fmt, ev, this.key); }

  join(lines: unknown[]): Buffer { return Buffer.concat(lines as Buffer[]); }

  deliver(line: unknown): boolean {
    if (this.done || (line as Buffer).length === 0) return true;
    return this.sink.write!(line as Buffer);
  }
}

/** Streams events to a sink until timeout, disconnect or an ERROR event. */
export async function streamWatch(s: Scope, sink: WatchSink, fmt: OutputFormat, minRequestTimeout: number): Promise<void> {
  const q = s.query;
  const filter = buildMatcher(s.def, q.get('labelSelector'), q.get('fieldSelector'));
  const timeoutMs = parseTimeout(s, minRequestTimeout);
  const rv = q.get('resourceVersion') ?? undefined;
  if (rv !== undefined && rv !== '' && !isResourceVersion(rv)) throw errors.badRequest(`resourceVersion: Invalid value: ${JSON.stringify(rv)}: must be a non-negative integer`);
  const ac = new AbortController();
  const onAbort = (): void => ac.abort();
  sink.signal.addEventListener('abort', onAbort, { once: true });
  // A plain flag read per event (AbortSignal getters validate their receiver on every call).
  let stopped = false;
  let onStop!: () => void;
  const stoppedPromise = new Promise<void>((resolve) => { onStop = resolve; });
  ac.signal.addEventListener('abort', () => { stopped = true; onStop(); }, { once: true });
  // The timeout ends the watch even when the client reads slowly: what is still buffered for it
  // is dropped (abort) rather than drained first.
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; ac.abort(); }, timeoutMs);
  timer.unref();
  const ref = s.registry.refOf(s.def, s.namespace, 'x');
  // A name pins the watch to one key only within a namespace (or for a cluster-scoped
  // resource); across all namespaces the field selector's filter matches the name instead.
  const named = s.name || exactName(q.get('fieldSelector'));
  const name = named && (!s.def.namespaced || s.namespace) ? named : '';
  const key = encodingKey(s, fmt);
  const bookmarks = queryBool(q.get('allowWatchBookmarks')) === true;
  const watch = s.registry.store.watch({
    resource: ref.resource, group: ref.group, namespace: s.def.namespaced ? s.namespace : '',
    name: name || undefined, resourceVersion: rv, allowBookmarks: bookmarks,
    filter: filter ? (o: KubeObject) => filter(o) : undefined, trigger: watchTrigger(s.def, q.get('fieldSelector')), signal: ac.signal,
  });
  const finish = (): void => {
    clearTimeout(timer);
    sink.signal.removeEventListener('abort', onAbort);
    watch.close();
    if (timedOut && sink.abort) sink.abort(); else sink.end();
  };
  const write = sink.write?.bind(sink);
  if (watch.push && write && sink.onDrain) {
    // Push delivery: each event is encoded once (shared bytes) and written straight to the
    // response from the watch cache's fan-out; a full transport is reported back as
    // backpressure and a watcher that stays behind is ended by the store.
    const push = watch.push.bind(watch);
    const onDrain = sink.onDrain.bind(sink);
    // Watchers encoding alike share one encoding per live event in the store's fan-out
    // (encodeEvent's cache would give them the same bytes anyway), leaving each its write.
    const lines = key === undefined ? undefined : new SharedLines(key, s, fmt, sink);
    await new Promise<void>((resolve) => {
      let done = false;
      const end = (): void => {
        if (done) return;
        done = true;
        if (lines) lines.done = true;
        finish();
        resolve();
      };
      if (stopped) { end(); return; }
      ac.signal.addEventListener('abort', end, { once: true });
      const flow = push({
        event: (ev) => {
          if (done) return true;
          if (ev.type === 'BOOKMARK' && !bookmarks) return true;
          let line: Buffer;
          try {
            line = encodeEvent(s, fmt, ev, key);
          } catch (e) {
            s.ctx.log.warn({ err: e }, 'cannot encode a watch event; ending the watch');
            end();
            return true;
          }
          const ok = write(line);
          if (ev.type === 'ERROR') end();
          return ok;
        },
        end,
        shared: lines,
      });
      onDrain(() => flow.resume());
    });
    return;
  }
  try {
    for await (const ev of watch) {
      if (stopped) break;
      if (ev.type === 'BOOKMARK' && !bookmarks) continue;
      const wait = sink.send(encodeEvent(s, fmt, ev, key));
      // A full transport is waited for only until the watch ends (timeout or disconnect).
      if (wait) await Promise.race([wait, stoppedPromise]);
      if (stopped) break;
      if (ev.type === 'ERROR') break;
    }
  } finally {
    finish();
  }
}

/**
 * The chunked-HTTP sink of a watch. Once the headers are out, an HTTP/2 watch writes its events
 * straight onto the stream (`stream`): the response wrapper's per-write checks are settled then
 * (nothing is written after end or once `closed`, and a watch is never a HEAD). A class, so the
 * fan-out's write per watcher reads one object's fields.
 */
class ResponseSink implements WatchSink {
  /** The client went away (or the request was aborted): writes are dropped. */
  closed = false;

  constructor(readonly signal: AbortSignal, private readonly res: ApiResponse, private readonly stream: Http2Stream | undefined) {
    // A plain flag read per write: AbortSignal's getter validates its receiver on every call.
    signal.addEventListener('abort', () => { this.closed = true; }, { once: true });
  }

  send(line: Buffer): Promise<void> | void {
    if (this.closed) return;
    const res = this.res;
    if ((res as { write(b: Buffer): boolean }).write(line)) return;
    const signal = this.signal;
    return new Promise<void>((resolve) => {
      const done = (): void => { res.off('drain', done); signal.removeEventListener('abort', done); resolve(); };
      res.on('drain', done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  write(line: Buffer): boolean {
    if (this.closed) return true;
    return this.stream ? this.stream.write(line) : (this.res as { write(b: Buffer): boolean }).write(line);
  }

  onDrain(cb: () => void): void { this.res.on('drain', cb); }

  end(): void { if (!this.res.writableEnded) this.res.end(); }

  abort(): void {
    const res = this.res;
    // Only a transport that is behind (above its high-water mark) is cut: a client keeping up
    // gets the orderly end.
    const behind = res instanceof H2Response ? res.stream.writableNeedDrain : (res as { writableNeedDrain?: boolean }).writableNeedDrain === true;
    if (!behind || res.writableEnded) { this.end(); return; }
    // HTTP/2 resets just this stream; HTTP/1.1 has no way to cut a response but closing the connection.
    if (res instanceof H2Response) res.stream.close(constants.NGHTTP2_CANCEL);
    else (res as { destroy(): void }).destroy();
  }
}

/** Chunked HTTP watch. */
export async function handleWatch(s: Scope, minRequestTimeout: number): Promise<void> {
  const fmt = watchFormat(s);
  // Validate everything that can fail before the 200 goes out.
  buildMatcher(s.def, s.query.get('labelSelector'), s.query.get('fieldSelector'));
  parseTimeout(s, minRequestTimeout);
  const rv = s.query.get('resourceVersion');
  if (rv !== null && rv !== '' && !isResourceVersion(rv)) throw errors.badRequest(`resourceVersion: Invalid value: ${JSON.stringify(rv)}: must be a non-negative integer`);
  const res = s.res;
  // Headers go out at once (HTTP/2 writeHead responds immediately; HTTP/1.1 needs the flush),
  // so a client watching a quiet resource sees its 200 before the first event.
  res.writeHead(200, {
    'Content-Type': fmt.mediaType === 'application/vnd.kubernetes.protobuf' ? 'application/vnd.kubernetes.protobuf;stream=watch' : 'application/json',
    'Cache-Control': 'no-cache, private',
  });
  if ('flushHeaders' in res && typeof res.flushHeaders === 'function') res.flushHeaders();
  const stream = res instanceof H2Response && res.stream.headersSent ? res.stream : undefined;
  const ac = new AbortController();
  const onClose = (): void => ac.abort();
  res.on('close', onClose);
  s.ctx.signal.addEventListener('abort', onClose, { once: true });
  const sink = new ResponseSink(ac.signal, res, stream);
  try {
    await streamWatch(s, sink, fmt, minRequestTimeout);
  } finally {
    res.off('close', onClose);
    s.ctx.signal.removeEventListener('abort', onClose);
  }
}

/** WebSocket watch: one text message per event. */
export async function handleWebSocketWatch(s: Scope, ws: WebSocket, minRequestTimeout: number): Promise<void> {
  const fmt = watchFormat(s, false);
  const ac = new AbortController();
  ws.on('close', () => ac.abort());
  ws.on('error', () => ac.abort());
  const sink: WatchSink = {
    signal: ac.signal,
    send: (line) => new Promise<void>((resolve) => {
      if (ws.readyState !== ws.OPEN) { resolve(); return; }
      // The shared JSON line without its newline, as a text message (no per-watcher copy).
      const end = line.length > 0 && line[line.length - 1] === 0x0a ? line.length - 1 : line.length;
      ws.send(line.subarray(0, end), { binary: false }, () => resolve());
    }),
    end: () => { if (ws.readyState === ws.OPEN) ws.close(1000); },
    abort: () => {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.bufferedAmount > 0) ws.terminate(); else ws.close(1000);
    },
  };
  await streamWatch(s, sink, fmt, minRequestTimeout);
}
