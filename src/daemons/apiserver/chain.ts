/**
 * THE request filter chain, in DESIGN §2's order. Read `buildFilters` top to bottom to know what
 * happens to every request before a handler sees it:
 *
 *   panic recovery → request info → (metrics) → in-flight limit → timeout → (connection
 *   throttle) → (CORS) → authentication → audit → impersonation → authorization → handler
 *
 * The handler serves the non-resource paths (/healthz, /livez, /readyz, /version, /metrics, and
 * with their options /debug/pprof/, /logs/, /api-docs-ui/) and hands everything else to the REST layer; unknown paths without a REST layer are 404.
 * HTTP/1.1 upgrades (exec, attach, port-forward, websockets) pass the same filters (the limits
 * skip them: they are long-running) and then go to the REST layer's handleUpgrade.
 */
import type * as http from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError, errors } from '../../api/meta/status.js';
import type { Authenticator } from '../../auth/authenticator.js';
import type { Authorizer } from '../../auth/authorizer.js';
import type { ApiRequest, ApiResponse, RequestContext } from './context.js';
import { audit, type AuditSink } from './filters/audit.js';
import { authentication } from './filters/authentication.js';
import { authorization } from './filters/authorization.js';
import { impersonation } from './filters/impersonation.js';
import { connectionThrottle } from './filters/connection-throttle.js';
import { cors, corsPatterns } from './filters/cors.js';
import type { Exchange, Filter } from './filters/filter.js';
import { inflightLimit } from './filters/inflight-limit.js';
import { instrumentation } from './filters/instrumentation.js';
import { panicRecovery } from './filters/panic-recovery.js';
import { requestInfo } from './filters/request-info.js';
import { requestTimeout } from './filters/request-timeout.js';
import { writeStatus, writeStatusToSocket } from './filters/write-status.js';
import { isApiDocsPath, serveApiDocs } from './debug/api-docs-ui.js';
import { isLogsPath, serveLogs } from './debug/logs-handler.js';
import { isPprofPath, serveApiserverPprof } from './debug/pprof.js';
import type { HealthChecks } from './health.js';
import type { ApiserverMetrics } from './metrics.js';
import { OpenRequests } from './request-abort.js';
import { ChainExchange } from './exchange.js';
import { parseRequestTarget, type RequestTarget } from './request-target.js';
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
  options: Pick<ServingOptions, 'maxRequestsInflight' | 'maxMutatingRequestsInflight' | 'requestTimeout' | 'maxConnectionBytesPerSec' | 'corsAllowedOrigins'
    | 'profiling' | 'enableLogsHandler' | 'logsDir' | 'enableApiDocsUi'>;
  authenticator: Authenticator;
  authorizer: Authorizer;
  metrics: ApiserverMetrics;
  health: HealthChecks;
  rest?: RestHandler;
  audit?: AuditSink;
}

export function buildFilters(d: ChainDeps): Filter[] {
  const corsFilter = cors(corsPatterns(d.options.corsAllowedOrigins ?? []));
  return [
    panicRecovery(),
    requestInfo(),
    instrumentation(d.metrics, d.log),
    inflightLimit({ ...d.options, metrics: d.metrics }),
    requestTimeout(d.options),
    connectionThrottle(d.options),
    // Only with --cors-allowed-origins; before authentication, so a preflight needs no credentials.
    ...(corsFilter ? [corsFilter] : []),
    authentication(d.authenticator),
    audit(d.audit),
    // Impersonate-* headers: checked against the authenticated user, then the request runs as the impersonated one.
    impersonation(d.authorizer),
    authorization(d.authorizer),
  ];
}

const NOT_FOUND_MESSAGE = 'the server could not find the requested resource';

export class RequestChain {
  private readonly filters: Filter[];
  /** Aborted when the server stops; later requests start aborted. */
  private readonly stopping = new AbortController();

  /** Requests not yet closed, so shutdown can abort them (no listener per request on a shared signal). */
  private readonly open = new OpenRequests();

  constructor(private readonly deps: ChainDeps) {
    this.filters = buildFilters(deps);
  }

  /** Aborts every request's signal (long-running ones end); called on shutdown. */
  abortAll(): void {
    const reason = new Error('server shutting down');
    this.stopping.abort(reason);
    this.open.abortAll(reason);
  }

  /** Entry point for 'request' events (HTTP/2 and plain HTTP/1.1). */
  handle(req: ApiRequest, res: ApiResponse): void {
    // A handler may still write after its request was answered (timeout); such writes fail
    // quietly instead of raising an unhandled 'error'.
    res.on('error', this.onResponseError);
    const x = this.exchange(req, res, undefined);
    if (!x) return;
    this.run(x);
  }

  private readonly onResponseError = (e: Error): void => this.deps.log.debug({ err: e.message }, 'response error');

  /** Entry point for HTTP/1.1 'upgrade' events. */
  handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (e: Error) => this.deps.log.debug({ err: e.message }, 'upgrade socket error'));
    const x = this.exchange(req, undefined, { socket, head });
    if (!x) return;
    socket.once('close', () => {
      x.abort.abort(new Error('client disconnected'));
      this.open.delete(x.abort);
    });
    this.run(x);
  }

  private exchange(req: ApiRequest, res: ApiResponse | undefined, upgrade: Exchange['upgrade']): ChainExchange | undefined {
    let url: RequestTarget;
    try {
      url = parseRequestTarget(req.url);
    } catch {
      const err = errors.badRequest('malformed request URL');
      if (res) writeStatus(res, err); else if (upgrade) writeStatusToSocket(upgrade.socket, err);
      return undefined;
    }
    const x = new ChainExchange(req, url, this.deps.log, res, upgrade);
    const abort = x.abort;
    if (this.stopping.signal.aborted) abort.abort(this.stopping.signal.reason);
    else this.open.add(abort);
    if (res) {
      // ('finish' is no proof the client got the response: HTTP/2 responses report it with the
      // stream's 'close', also after a reset; so ask whether we ended the response.)
      res.once('close', () => {
        if (!res.writableEnded) abort.abort(new Error('client disconnected'));
        this.open.delete(abort);
        x.closed();
      });
    }
    return x;
  }

  private run(x: Exchange): void {
    // Filters that only look at the request return next()'s promise themselves, so a request
    // builds one promise per wrapping filter, not one per filter and level.
    const filters = this.filters;
    const dispatch = (i: number): Promise<void> => {
      const f = filters[i];
      if (!f) return this.route(x);
      return f.run(x, () => dispatch(i + 1));
    };
    let done: Promise<void>;
    try {
      done = dispatch(0);
    } catch (e) {
      done = Promise.reject(e);
    }
    done.catch((e: unknown) => {
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
    // The operator's pages (debug/): each behind its option; off, the path is unknown (404).
    const o = this.deps.options;
    if (o.profiling !== false && isPprofPath(path)) return serveApiserverPprof(method, path, x.ctx, res);
    if (o.enableLogsHandler !== false && isLogsPath(path)) return serveLogs(method, path, res, o.logsDir ?? '/var/log', x.ctx.signal);
    if (o.enableApiDocsUi === true && isApiDocsPath(path)) return serveApiDocs(method, path, res);
    if (rest) return rest.handle(x.ctx, x.req, res);
    throw new ApiError(404, 'NotFound', NOT_FOUND_MESSAGE);
  }
}
