/**
 * The per-request context the filter chain builds and every handler (REST layer, health,
 * metrics) receives. Built once per request by the chain, read-only afterwards except `user`,
 * which the authentication filter fills in.
 */
import type * as http from 'node:http';
import type * as http2 from 'node:http2';
import type { Logger } from 'pino';
import type { UserInfo } from '../../auth/user.js';
import type { RequestInfo } from './request-info.js';

/** A request as the listener delivers it: HTTP/1.1 (including upgrades) or HTTP/2 compat. */
export type ApiRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type ApiResponse = http.ServerResponse | http2.Http2ServerResponse;

/** Who is asking (declared in src/auth so authenticators share it; re-exported here). */
export type { UserInfo } from '../../auth/user.js';

export interface RequestContext {
  info: RequestInfo;
  user: UserInfo;
  /** The parsed query string (repeated keys preserved: use getAll). */
  query: URLSearchParams;
  /** Aborted on client disconnect and on request timeout; handlers stop their work on it. */
  signal: AbortSignal;
  /** Epoch milliseconds after which the request times out; undefined for long-running requests. */
  deadline?: number;
  requestId: string;
  /** A child logger carrying requestId, method and path (created on first use). */
  log: Logger;
  /** Watches, exec/attach/portforward, proxy, followed logs: no timeout, not counted in-flight. */
  isLongRunning: boolean;
}

/** The anonymous user, before (or instead of) authentication. A fresh object each call. */
export function anonymousUser(): UserInfo {
  return { name: 'system:anonymous', groups: ['system:unauthenticated'] };
}
