/**
 * The per-request context the filter chain builds and every handler (REST layer, health,
 * metrics) receives. Built once per request by the chain, read-only afterwards except `user`,
 * which the authentication filter fills in (and impersonation replaces, keeping `originalUser`).
 */
import type * as http from 'node:http';
import type { Logger } from 'pino';
import type { UserInfo } from '../../auth/user.js';
import type { H2Request } from './h2-request.js';
import type { H2Response } from './h2-response.js';
import type { RequestInfo } from './request-info.js';
import type { AuditRecord } from './audit/event.js';

/**
 * A request as the listener delivers it: Node's HTTP/1.1 classes (including upgrades), or for an
 * HTTP/2 stream the lean pair in h2-request.ts / h2-response.ts (not Node's compat layer).
 */
export type ApiRequest = http.IncomingMessage | H2Request;
export type ApiResponse = http.ServerResponse | H2Response;

/** Who is asking (declared in src/auth so authenticators share it; re-exported here). */
export type { UserInfo } from '../../auth/user.js';

export interface RequestContext {
  info: RequestInfo;
  user: UserInfo;
  /**
   * The authenticated user when the request runs as another through impersonation
   * (Impersonate-* headers; `user` is then the impersonated one). Audit shows both.
   */
  originalUser?: UserInfo;
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
  /**
   * The request's audit record, present only when the audit policy gave it a level above None:
   * filters and handlers add what audit reports (authorization decision, the object's name).
   */
  audit?: AuditRecord;
}

/** The anonymous user, before (or instead of) authentication. A fresh object each call. */
export function anonymousUser(): UserInfo {
  return { name: 'system:anonymous', groups: ['system:unauthenticated'] };
}
