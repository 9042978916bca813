/**
 * The request side of an HTTP/2 stream, without Node's compat layer (Http2ServerRequest, a
 * Readable wrapping the stream): exactly the part of the http.IncomingMessage API this API
 * server uses. Nothing is allocated for the body: 'data', 'end', 'error' and 'close' listeners
 * are registered on the Http2Stream itself, so a GET (whose stream ended with its headers)
 * costs no Readable at all, and a POST body is read straight from the stream.
 *
 * Like the compat layer, an unread body is discarded by Node once the stream closes, and
 * 'close' is the stream's (it fires after a reset too).
 */
import type { IncomingHttpHeaders, ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

type RequestEvent = 'data' | 'end' | 'error' | 'close';
/** A listener for one of those events (its arguments are the stream's: a Buffer, an Error, none). */
type Listener = (...args: never[]) => void;

export class H2Request {
  readonly method: string;
  readonly url: string;
  /** The stream's session, kept: a destroyed stream forgets it, and the socket outlives both. */
  private readonly session: ServerHttp2Session;

  /**
   * `headers` includes the pseudo-headers (:method, :path, :authority, :scheme), as in the compat
   * layer; `rawHeaders` (name, value, ...) keeps repeated headers apart, as IncomingMessage's does.
   */
  constructor(readonly stream: ServerHttp2Stream, readonly headers: IncomingHttpHeaders, readonly rawHeaders: readonly string[] = []) {
    this.method = headers[':method'] ?? 'GET';
    this.url = headers[':path'] ?? '/';
    this.session = stream.session as ServerHttp2Session;
  }

  /**
   * The connection's TLS socket (the session's socket facade: certificate and address reads
   * pass through, reads and writes are refused). One object per connection, so it can key
   * per-connection caches.
   */
  get socket(): TLSSocket | Socket {
    return this.session.socket;
  }

  on(event: RequestEvent, fn: Listener): this {
    this.stream.on(event, fn as (...args: unknown[]) => void);
    return this;
  }

  once(event: RequestEvent, fn: Listener): this {
    this.stream.once(event, fn as (...args: unknown[]) => void);
    return this;
  }

  off(event: RequestEvent, fn: Listener): this {
    this.stream.off(event, fn as (...args: unknown[]) => void);
    return this;
  }

  /** Lets the rest of the body flow (and be dropped when nobody listens for 'data'). */
  resume(): this {
    this.stream.resume();
    return this;
  }

  /** Resets the stream. */
  destroy(err?: Error): this {
    if (!this.stream.destroyed) this.stream.destroy(err);
    return this;
  }
}
