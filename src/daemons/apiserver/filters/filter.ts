/**
 * The filter contract. A request travels as an Exchange through the ordered filters in chain.ts;
 * each filter may answer (throw an ApiError, or call `fail`) or pass on with `next()`. The
 * exchange is either a normal HTTP request/response (HTTP/1.1 or HTTP/2) or an HTTP/1.1 upgrade
 * (exec, attach, port-forward, websockets) whose response is the raw socket.
 */
import type { Duplex } from 'node:stream';
import type { ApiError } from '../../../api/meta/status.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import type { RequestTarget } from '../request-target.js';

export interface Exchange {
  readonly req: ApiRequest;
  readonly url: RequestTarget;
  readonly ctx: RequestContext;
  /** Aborts ctx.signal (client gone, timed out, server stopping). */
  readonly abort: { abort(reason?: unknown): void };
  /** The HTTP response; absent for upgrades. */
  readonly res?: ApiResponse;
  /** Present for HTTP/1.1 upgrade requests. */
  readonly upgrade?: { socket: Duplex; head: Buffer };
  /**
   * Answers with `err` as a Status when nothing was sent yet; otherwise cuts the response off
   * (a half-written body must not look complete). Later calls are no-ops.
   */
  fail(err: ApiError): void;
  /** True once a status line was sent or an upgrade socket was handed to a handler. */
  started(): boolean;
  /** Records that a handler now owns the upgrade socket (failures then cut it off). */
  handOver(): void;
  /**
   * Runs `fn` once when the response closes (finished or reset), after the chain's own
   * bookkeeping; one 'close' listener per request serves every filter. Not called for upgrades.
   */
  onClose(fn: () => void): void;
}

export interface Filter {
  readonly name: string;
  run(x: Exchange, next: () => Promise<void>): Promise<void>;
}
