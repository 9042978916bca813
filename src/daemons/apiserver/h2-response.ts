/**
 * The response side of an HTTP/2 stream, without Node's compat layer (Http2ServerResponse):
 * exactly the part of the http.ServerResponse API this API server uses, written straight onto
 * the Http2Stream. Headers are collected until the first write, writeHead, flushHeaders or end,
 * then go out in one `stream.respond()`; `end(body)` before that sends HEADERS and the body
 * with END_STREAM in one write when the request was not read, and otherwise the body in one DATA
 * frame and, once that write completed, an empty DATA frame carrying END_STREAM (see end()).
 * No trailers are ever sent.
 *
 * Events are the stream's own: listeners given to on/once/off for 'close', 'drain' and 'error'
 * are registered on the Http2Stream itself (no per-response EventEmitter), and 'finish' maps to
 * the stream's 'close' as in the compat layer (which emits 'finish' then 'close' when the
 * stream closes, also after a reset). A stream's 'error' never escapes: the chain listens for
 * it (chain.handle; server.ts for streams it refuses), as the compat layer swallowed them.
 *
 * Contract: used from the one thread that owns the stream; `writableEnded` is true from the
 * first `end()` call on; writes after end, or after the stream closed, are dropped and their
 * callback gets the error (the compat layer would reset the stream instead).
 */
import { constants, type Http2Stream, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';

type Callback = (err?: Error | null) => void;
type HeaderValue = number | string | readonly string[];
type ResponseEvent = 'close' | 'drain' | 'error' | 'finish';
/** A listener for one of those events (only 'error' has an argument). */
type Listener = (...args: never[]) => void;

const STATUS = constants.HTTP2_HEADER_STATUS;

/** The stream event a response event is delivered by. */
function streamEvent(ev: string): string {
  return ev === 'finish' ? 'close' : ev;
}

function headersSentError(): Error {
  return Object.assign(new Error('Response has already been initiated.'), { code: 'ERR_HTTP2_HEADERS_SENT' });
}

function streamGoneError(ended: boolean): Error {
  return ended
    ? Object.assign(new Error('write after end'), { code: 'ERR_STREAM_WRITE_AFTER_END' })
    : Object.assign(new Error('The stream has been destroyed'), { code: 'ERR_HTTP2_INVALID_STREAM' });
}

/**
 * A bag of header names: objects made by `new HeaderBag()` have a prototype without
 * Object.prototype above it, so every name (even `constructor` or `__proto__`) is an own
 * property, yet unlike Object.create(null) they stay in V8's fast mode: the same headers set in
 * the same order share one hidden class, and stream.respond() enumerates them from its cache.
 */
const HeaderBag = function HeaderBag() { /* fields are added by name */ } as unknown as new () => OutgoingHttpHeaders;
HeaderBag.prototype = Object.create(null) as object;

export class H2Response {
  /** The status sent with the headers (200 unless set). */
  statusCode = 200;
  private ending = false;
  /** Lower-case names; pseudo-header ':status' is added when the headers go out. */
  private readonly headers: OutgoingHttpHeaders = new HeaderBag();

  constructor(readonly stream: ServerHttp2Stream) {}

  get headersSent(): boolean { return this.stream.headersSent; }
  get writableEnded(): boolean { return this.ending; }
  get destroyed(): boolean { return this.stream.destroyed; }

  setHeader(name: string, value: HeaderValue): this {
    if (this.stream.headersSent) throw headersSentError();
    const key = name.toLowerCase();
    // HTTP/2 has no Connection header; the compat layer drops it the same way.
    if (key !== 'connection') this.headers[key] = value as OutgoingHttpHeaders[string];
    return this;
  }

  getHeader(name: string): HeaderValue | undefined {
    return this.headers[name.toLowerCase()];
  }

  hasHeader(name: string): boolean {
    return this.headers[name.toLowerCase()] !== undefined;
  }

  removeHeader(name: string): void {
    if (this.stream.headersSent) throw headersSentError();
    delete this.headers[name.toLowerCase()];
  }

  /** Sends the status line and headers at once (a later write or end adds the body). */
  writeHead(statusCode: number, headers?: Record<string, HeaderValue | undefined>): this {
    if (this.gone()) return this;
    if (this.stream.headersSent) throw headersSentError();
    if (headers) for (const k in headers) { const v = headers[k]; if (v !== undefined) this.setHeader(k, v); }
    this.statusCode = statusCode;
    this.respond(false);
    return this;
  }

  flushHeaders(): void {
    if (!this.gone() && !this.stream.headersSent) this.respond(false);
  }

  write(chunk: string | Uint8Array, encoding?: BufferEncoding | Callback, cb?: Callback): boolean {
    const callback = typeof encoding === 'function' ? encoding : cb;
    const enc = typeof encoding === 'string' ? encoding : undefined;
    if (this.ending || this.gone()) {
      if (callback) process.nextTick(callback, streamGoneError(this.ending));
      return false;
    }
    if (!this.stream.headersSent) this.respond(false);
    // A HEAD request (or a 204/304) had its writable side ended by respond(): no body goes out.
    if (this.stream.writableEnded) {
      if (callback) process.nextTick(callback);
      return true;
    }
    return enc ? this.stream.write(chunk, enc, callback) : this.stream.write(chunk, callback);
  }

  end(cb?: () => void): this;
  end(chunk: string | Uint8Array, cb?: () => void): this;
  end(chunk: string | Uint8Array, encoding: BufferEncoding, cb?: () => void): this;
  end(chunk?: string | Uint8Array | Callback, encoding?: BufferEncoding | Callback, cb?: Callback): this {
    let body: string | Uint8Array | undefined;
    let enc: BufferEncoding | undefined;
    let callback: Callback | undefined;
    if (typeof chunk === 'function') callback = chunk;
    else {
      body = chunk ?? undefined;
      if (typeof encoding === 'function') callback = encoding;
      else { enc = encoding; callback = cb; }
    }
    const s = this.stream;
    if (this.ending || this.gone()) {
      if (callback) process.nextTick(callback);
      return this;
    }
    this.ending = true;
    const hasBody = body !== undefined && (typeof body === 'string' ? body.length > 0 : body.byteLength > 0);
    if (!s.headersSent) this.respond(!hasBody);
    // respond() already ended the writable side for HEAD, 204, 304 and an empty body.
    if (s.writableEnded) {
      if (callback) s.once('close', callback);
      return this;
    }
    if (callback) s.once('finish', callback);
    if (hasBody && s.readableFlowing === null) {
      // Nobody read the request (a GET, a DELETE without a body): end with the body, so body
      // and END_STREAM leave in one write. When the stream then closes, Node waits for its
      // readable side to end (on a later tick) before destroying it, so the write completes
      // on a live stream.
      if (enc) s.end(body, enc); else s.end(body);
    } else if (hasBody) {
      // The request body was read (to its end): the body first, END_STREAM once its write has
      // completed. Ending with the body would close the stream before the write completes; a
      // stream whose request body was read to its end is then destroyed at once, and Node's
      // Writable builds an ERR_STREAM_DESTROYED Error (with its stack) for the late write
      // (even with no callback waiting for it): about a fifth of a bare POST server's CPU.
      // The price is a second write (and TLS record) for END_STREAM.
      const endAfterWrite = (err?: Error | null): void => { if (!err && !s.destroyed) s.end(); };
      if (enc) s.write(body, enc, endAfterWrite); else s.write(body, endAfterWrite);
    } else s.end();
    return this;
  }

  /** Resets the stream (RST_STREAM); an error is reported to the stream's 'error' listeners. */
  destroy(err?: Error): void {
    if (!this.stream.destroyed) this.stream.destroy(err);
  }

  on(event: ResponseEvent, fn: Listener): this {
    this.stream.on(streamEvent(event), fn as (...args: unknown[]) => void);
    return this;
  }

  once(event: ResponseEvent, fn: Listener): this {
    this.stream.once(streamEvent(event), fn as (...args: unknown[]) => void);
    return this;
  }

  off(event: ResponseEvent, fn: Listener): this {
    this.stream.off(streamEvent(event), fn as (...args: unknown[]) => void);
    return this;
  }

  /** For wrappers that signal 'drain' themselves (connection-throttle.ts). */
  emit(event: ResponseEvent, ...args: unknown[]): boolean {
    return this.stream.emit(streamEvent(event), ...args);
  }

  /** True once the stream can no longer carry a response (reset, closed or destroyed). */
  private gone(): boolean {
    const s: Http2Stream = this.stream;
    return s.destroyed || s.closed;
  }

  private respond(endStream: boolean): void {
    this.headers[STATUS] = this.statusCode;
    this.stream.respond(this.headers, { endStream });
  }
}
