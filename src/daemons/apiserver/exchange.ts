/**
 * The per-request objects the chain (chain.ts) builds: the RequestContext handlers see and the
 * Exchange the filters pass along. Classes rather than object literals with closures: a request
 * then allocates two small objects with shared methods, and what most requests never use (the
 * abort signal, the request id, the child logger) is made on first use.
 */
import { randomUUID } from 'node:crypto';
import { constants as h2constants } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ApiError } from '../../api/meta/status.js';
import { anonymousUser, type ApiRequest, type ApiResponse, type RequestContext, type UserInfo } from './context.js';
import type { Exchange } from './filters/filter.js';
import { H2Response } from './h2-response.js';
import { writeStatus, writeStatusToSocket } from './filters/write-status.js';
import { RequestAbort } from './request-abort.js';
import type { RequestInfo } from './request-info.js';
import type { RequestTarget } from './request-target.js';
import type { AuditRecord } from './audit/event.js';

/** What a request is before the request-info filter reads it. */
function placeholderInfo(path: string, method: string): RequestInfo {
  return {
    isResourceRequest: false, path, verb: method.toLowerCase(), apiPrefix: '', apiGroup: '',
    apiVersion: '', namespace: '', resource: '', subresource: '', name: '', parts: [],
  };
}

const MAX_AUDIT_ID = 128;
const PRINTABLE = /^[\x21-\x7e]+$/;

export class ChainContext implements RequestContext {
  info: RequestInfo;
  user: UserInfo = anonymousUser();
  readonly query: URLSearchParams;
  deadline?: number;
  isLongRunning = false;
  audit?: AuditRecord;
  private id: string | undefined;
  private logger: Logger | undefined;

  constructor(
    private readonly abort: RequestAbort,
    private readonly baseLog: Logger,
    private readonly method: string,
    private readonly path: string,
    query: URLSearchParams,
  ) {
    this.info = placeholderInfo(path, method);
    this.query = query;
  }

  get signal(): AbortSignal { return this.abort.signal; }
  get requestId(): string { return (this.id ??= randomUUID()); }
  /** An Audit-ID the client sent, used as the request's id (as Kubernetes does). */
  useRequestId(id: string): void { this.id = id; }
  get log(): Logger { return (this.logger ??= this.baseLog.child({ requestId: this.requestId, method: this.method, path: this.path })); }
  set log(l: Logger) { this.logger = l; }
}

export class ChainExchange implements Exchange {
  readonly ctx: ChainContext;
  readonly abort = new RequestAbort();
  private done = false;
  private handedOver = false;
  private closeHooks: (() => void)[] | undefined;

  constructor(
    readonly req: ApiRequest,
    readonly url: RequestTarget,
    log: Logger,
    readonly res?: ApiResponse,
    readonly upgrade?: { socket: Duplex; head: Buffer },
  ) {
    this.ctx = new ChainContext(this.abort, log, req.method ?? 'GET', url.pathname, url.searchParams);
    // Every answer names its audit id, audited or not (Kubernetes' WithAuditInit).
    const given = req.headers['audit-id'];
    if (typeof given === 'string' && given.length > 0 && given.length <= MAX_AUDIT_ID && PRINTABLE.test(given)) this.ctx.useRequestId(given);
    if (res) res.setHeader('Audit-Id', this.ctx.requestId);
  }

  started(): boolean { return this.res ? this.res.headersSent : this.handedOver; }
  handOver(): void { this.handedOver = true; }
  onClose(fn: () => void): void { (this.closeHooks ??= []).push(fn); }

  /** Runs the close hooks (the chain calls this on the response's 'close'). */
  closed(): void {
    if (this.closeHooks) for (const fn of this.closeHooks) fn();
  }

  fail(err: ApiError): void {
    if (this.done) return;
    this.done = true;
    const { res, upgrade } = this;
    if (res) {
      // Already answered in full: a late failure changes nothing the client sees.
      if (res.writableEnded) return;
      if (!res.headersSent) writeStatus(res, err);
      else cutOff(res);
    } else if (upgrade) {
      if (!this.handedOver) writeStatusToSocket(upgrade.socket, err);
      else upgrade.socket.destroy();
    }
  }
}

/** Ends a response that already started, so the client sees an error rather than a short body. */
function cutOff(res: ApiResponse): void {
  if (res instanceof H2Response) {
    const s = res.stream;
    if (!s.destroyed) s.close(h2constants.NGHTTP2_INTERNAL_ERROR);
  } else {
    res.destroy();
  }
}
