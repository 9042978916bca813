/**
 * THE request filter chain, in DESIGN §2's order. Read `buildFilters` top to bottom to know what
 * happens to every request before a handler sees it:
 *
 *   panic recovery → request info → (metrics) → in-flight limit → timeout → (connection
 *   throttle) → authentication → audit → authorization → handler
 *
 * The handler serves the non-resource paths (/healthz, /livez, /readyz, /version, /metrics) and
 * hands everything else to the REST layer; unknown paths without a REST layer are 404.
 * HTTP/1.1 upgrades (exec, attach, port-forward, websockets) pass the same filters (the limits
 * skip them: they are long-running) and then go to the REST layer's handleUpgrade.
 */
import { randomUUID } from 'node:crypto';
import type * as http from 'node:http';
import { constants as h2constants, type Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError, errors } from '../../api/meta/status.js';
import type { Authenticator } from '../../auth/authenticator.js';
import type { Authorizer } from '../../auth/authorizer.js';
import { anonymousUser, type ApiRequest, type ApiResponse, type RequestContext } from './context.js';
import { audit, type AuditSink } from './filters/audit.js';
import { authentication } from './filters/authentication.js';
import { authorization } from './filters/authorization.js';
import { connectionThrottle } from './filters/connection-throttle.js';
import type { Exchange, Filter } from './filters/filter.js';
import { inflightLimit } from './filters/inflight-limit.js';
import { instrumentation } from './filters/instrumentation.js';
import { panicRecovery } from './filters/panic-recovery.js';
import { requestInfo } from './filters/request-info.js';
import { requestTimeout } from './filters/request-timeout.js';
import { writeStatus, writeStatusToSocket } from './filters/write-status.js';
import type { HealthChecks } from './health.js';
import type { ApiserverMetrics } from './metrics.js';
import type { RequestInfo } from './request-info.js';
import type { ServingOptions } from './serving-options.js';
import { serveVersion } from './version.js';

/** What the chain needs from the REST layer (src/daemons/apiserver/rest). */
export interface RestHandler {
  handle(ctx: RequestContext, req: ApiRequest, res: ApiResponse): Promise<void>;
  /** Takes over an HTTP/1.1 upgrade; owns the socket from then on. */
  handleUpgrade?(ctx: RequestContext, req: http.IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface ChainDeps {
  log: Logger;
  options: Pick<ServingOptions, 'maxRequestsInflight' | 'maxMutatingRequestsInflight' | 'requestTimeout' | 'maxConnectionBytesPerSec'>;
  authenticator: Authenticator;
  authorizer: Authorizer;
  metrics: ApiserverMetrics;
  health: HealthChecks;
  rest?: RestHandler;
  audit?: AuditSink;
}

export function buildFilters(d: ChainDeps): Filter[] {
  return [
    panicRecovery(),
    requestInfo(),
    instrumentation(d.metrics, d.log),
    inflightLimit({ ...d.options, metrics: d.metrics }),
    requestTimeout(d.options),
    connectionThrottle(d.options),
    authentication(d.authenticator),
    audit(d.audit),
    authorization(d.authorizer),
  ];
}

const NOT_FOUND_MESSAGE = 'the server could not find the requested resource';

function placeholderInfo(path: string, method: string): RequestInfo {
  return {
    isResourceRequest: false, path, verb: method.toLowerCase(), apiPrefix: '', apiGroup: '',
    apiVersion: '', namespace: '', resource: '', subresource: '', name: '', parts: [],
  };
}

export class RequestChain {
  private readonly filters: Filter[];
  /** Aborted when the server stops; later requests start aborted. */
  private readonly stopping = new AbortController();

  /** Requests not yet closed, so shutdown can abort them (no listener per request on a shared signal). */
  private readonly open = new Set<AbortController>();

  constructor(private readonly deps: ChainDeps) {
    this.filters = buildFilters(deps);
  }

  /** Aborts every request's signal (long-running ones end); called on shutdown. */
  abortAll(): void {
    const reason = new Error('server shutting down');
    this.stopping.abort(reason);
    for (const a of this.open) a.abort(reason);
    this.open.clear();
  }

  private release(x: Exchange): void { this.open.delete(x.abort); }

  /** Entry point for 'request' events (HTTP/2 and plain HTTP/1.1). */
  handle(req: ApiRequest, res: ApiResponse): void {
    // A handler may still write after its request was answered (timeout); such writes fail
    // quietly instead of raising an unhandled 'error'.
    res.on('error', (e: Error) => this.deps.log.debug({ err: e.message }, 'response error'));
    const x = this.exchange(req, res, undefined);
    if (!x) return;
    // (HTTP/2 compat responses emit 'finish' even when the stream was reset, so ask whether
    // the response was ended by us instead.)
    res.once('close', () => {
      if (!res.writableEnded) x.abort.abort(new Error('client disconnected'));
      this.release(x);
    });
    this.run(x);
  }

  /** Entry point for HTTP/1.1 'upgrade' events. */
  handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (e: Error) => this.deps.log.debug({ err: e.message }, 'upgrade socket error'));
    const x = this.exchange(req, undefined, { socket, head });
    if (!x) return;
    socket.once('close', () => {
      x.abort.abort(new Error('client disconnected'));
      this.release(x);
    });
    this.run(x);
  }

  private exchange(req: ApiRequest, res: ApiResponse | undefined, upgrade: Exchange['upgrade']): Exchange | undefined {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://apiserver.invalid');
    } catch {
      const err = errors.badRequest('malformed request URL');
      if (res) writeStatus(res, err); else if (upgrade) writeStatusToSocket(upgrade.socket, err);
      return undefined;
    }
    const method = req.method ?? 'GET';
    const abort = new AbortController();
    if (this.stopping.signal.aborted) abort.abort(this.stopping.signal.reason);
    else this.open.add(abort);
    const requestId = randomUUID();
    // The per-request child logger is made on first use: most requests never log.
    const baseLog = this.deps.log;
    let log: Logger | undefined;
    const ctx: RequestContext = {
      info: placeholderInfo(url.pathname, method),
      user: anonymousUser(),
      query: url.searchParams,
      signal: abort.signal,
      requestId,
      get log(): Logger { return (log ??= baseLog.child({ requestId, method, path: url.pathname })); },
      set log(l: Logger) { log = l; },
      isLongRunning: false,
    };
    let done = false;
    let handedOver = false;
    const x: Exchange = {
      req, url, ctx, abort, ...(res ? { res } : {}), ...(upgrade ? { upgrade } : {}),
      started: () => (res ? res.headersSent : handedOver),
      handOver: () => { handedOver = true; },
      fail: (err: ApiError) => {
        if (done) return;
        done = true;
        if (res) {
          // Already answered in full: a late failure changes nothing the client sees.
          if (res.writableEnded) return;
          if (!res.headersSent) writeStatus(res, err);
          else cutOff(res);
        } else if (upgrade) {
          if (!handedOver) writeStatusToSocket(upgrade.socket, err);
          else upgrade.socket.destroy();
        }
      },
    };
    return x;
  }

  private run(x: Exchange): void {
    const dispatch = async (i: number): Promise<void> => {
      const f = this.filters[i];
      if (!f) return this.route(x);
      return f.run(x, () => dispatch(i + 1));
    };
    dispatch(0).catch((e: unknown) => {
      x.ctx.log.error({ err: e }, 'request failed outside the filters');
      x.fail(e instanceof ApiError ? e : errors.internal('the server could not complete the request', e));
    });
  }

  /** The handler at the end of the chain. */
  private async route(x: Exchange): Promise<void> {
    const { rest, health, metrics } = this.deps;
    const path = x.url.pathname;
    const method = (x.req.method ?? 'GET').toUpperCase();
    if (x.upgrade) {
      if (!rest?.handleUpgrade || !x.ctx.info.isResourceRequest) throw new ApiError(404, 'NotFound', NOT_FOUND_MESSAGE);
      x.handOver();
      rest.handleUpgrade(x.ctx, x.req as http.IncomingMessage, x.upgrade.socket, x.upgrade.head);
      return;
    }
    const res = x.res as ApiResponse;
    if (health.handles(path)) return health.serve(method, path, x.ctx.query, res);
    if (path === '/version' || path === '/version/') return serveVersion(method, res);
    if (path === '/metrics') {
      const body = await metrics.registry.metrics();
      res.statusCode = 200;
      res.setHeader('Content-Type', metrics.registry.contentType);
      res.end(body);
      return;
    }
    if (rest) return rest.handle(x.ctx, x.req, res);
    throw new ApiError(404, 'NotFound', NOT_FOUND_MESSAGE);
  }
}

/** Ends a response that already started, so the client sees an error rather than a short body. */
function cutOff(res: ApiResponse): void {
  if ('stream' in res && (res as Http2ServerResponse).stream) {
    const s = (res as Http2ServerResponse).stream;
    if (!s.destroyed) s.close(h2constants.NGHTTP2_INTERNAL_ERROR);
  } else {
    (res as http.ServerResponse).destroy();
  }
}
