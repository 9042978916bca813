/**
 * The API client: builds resource paths, encodes bodies in the configured content type,
 * decodes JSON or protobuf responses, turns failures into ApiError (from the Status body),
 * takes a rate-limiter token per request, and retries with bounded backoff.
 *
 * Retry policy (at most `maxRetries` retries):
 *  - 429: always retried (the server refused the request before acting on it), after
 *    Retry-After seconds (1 s when absent);
 *  - 5xx with Retry-After: retried for idempotent methods (GET, HEAD, PUT, DELETE) only;
 *  - network failures: retried when the request never reached the server, or for idempotent
 *    methods; a POST or PATCH that may have been applied is never resent.
 * With several API servers (ClientConnection.servers) a network failure or a 5xx moves the
 * transport to the next server, where the retry goes; an idempotent request answered with a
 * 5xx is retried on each other server once (a POST or PATCH is not: it may have been applied).
 */
import { pino, type Logger } from 'pino';
import { mediaTypeOf } from '../api/codec/body.js';
import { decodeProtobuf, encodeProtobuf, PROTOBUF_MEDIA_TYPE } from '../api/codec/protobuf.js';
import { ApiError, type Status, type StatusReason } from '../api/meta/status.js';
import { findResource } from '../api/resources/registry.js';
import type { KubeObject } from '../api/resources/types.js';
import { messageForObject } from '../api/schema/registry.js';
import { realClock, type Clock } from './clock.js';
import type { ClientConnection } from './coreconfig.js';
import type { BearerTokenSource } from './service-account-token-source.js';
import { TokenBucket } from './rate-limiter.js';
import { Http2Transport, readBody, TransportError, type TransportOptions } from './transport.js';
import { decodeWatchBody, type WatchEvent } from './watch-stream.js';

export type ContentType = 'application/json' | 'application/vnd.kubernetes.protobuf';

export interface RestClientOptions {
  connection: ClientConnection;
  /** Request body encoding for built-in kinds. @default protobuf */
  contentType?: ContentType | string;
  /** Requests per second; 0 or less is unlimited. @default 20 */
  qps?: number;
  /** @default 30 */
  burst?: number;
  /** @default 10 */
  maxRetries?: number;
  userAgent?: string;
  transport?: TransportOptions;
  clock?: Clock;
  log?: Logger;
  /** Send over this (another client's) transport instead of opening one; close() leaves it open. */
  sharedTransport?: Http2Transport;
  /**
   * Bearer tokens that change (service-account tokens renewed before expiry): sent with every
   * request; on a 401 the source is reset and the request sent once more with a fresh token.
   * The connection should then carry no other credentials.
   */
  tokenSource?: BearerTokenSource;
}

/** A resource collection: group ('' for core), version, plural, and namespace when namespaced. */
export interface ResourceRef {
  group: string;
  version: string;
  resource: string;
  namespace?: string;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestSpec extends ResourceRef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  name?: string;
  subresource?: string;
  query?: Query;
  body?: unknown;
  /** Content-Type of the body when it is not an object (patches). */
  bodyContentType?: string;
  signal?: AbortSignal;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
  limit?: number;
  continue?: string;
  timeoutSeconds?: number;
  allowWatchBookmarks?: boolean;
  signal?: AbortSignal;
}

export interface WriteOptions { dryRun?: boolean; fieldManager?: string; signal?: AbortSignal }

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';
const PATCH_TYPES: Record<PatchType, string> = {
  json: 'application/json-patch+json', merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json', apply: 'application/apply-patch+yaml',
};

export interface KubeList<T extends KubeObject = KubeObject> extends KubeObject {
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const MAX_RETRY_AFTER_MS = 60_000;

const REASON_BY_CODE: Record<number, StatusReason> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed',
  406: 'NotAcceptable', 409: 'Conflict', 410: 'Gone', 413: 'RequestEntityTooLarge', 415: 'UnsupportedMediaType',
  422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout',
};

/**
 * One path segment, escaped as Go's url.PathEscape does (client-go): ':' and '@' stay as they
 * are, so names such as `system:controller:x` reach the server unescaped.
 */
function pathSegment(s: string): string {
  return encodeURIComponent(s).replace(/%3A/gi, ':').replace(/%40/g, '@');
}

export function resourcePath(r: ResourceRef & { name?: string; subresource?: string }): string {
  let p = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  if (r.namespace) p += `/namespaces/${pathSegment(r.namespace)}`;
  p += `/${r.resource}`;
  if (r.name !== undefined) {
    if (r.name === '') throw new Error(`a ${r.resource} name is required`);
    p += `/${pathSegment(r.name)}`;
  }
  if (r.subresource) p += `/${r.subresource}`;
  return p;
}

function queryString(q: Query | undefined): string {
  if (!q) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === '') continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Fills apiVersion and kind from the registry when an object omits them. */
function withTypeMeta(ref: ResourceRef, obj: KubeObject): KubeObject {
  if (obj.apiVersion && obj.kind) return obj;
  const def = findResource(ref.group, ref.version, ref.resource);
  if (!def) return obj;
  return { ...obj, apiVersion: obj.apiVersion ?? (ref.group ? `${ref.group}/${ref.version}` : ref.version), kind: obj.kind ?? def.kind };
}

function isStatus(v: unknown): v is Status {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'Status';
}

function decode(contentType: string | undefined, buf: Buffer): unknown {
  if (buf.length === 0) return undefined;
  if (mediaTypeOf(contentType) === PROTOBUF_MEDIA_TYPE) return decodeProtobuf(buf);
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw new Error(`malformed JSON response: ${(e as Error).message}`);
  }
}

/** The ApiError for a failed response (a Status body when the server sent one). */
export function errorFromResponse(status: number, headers: Record<string, string>, body: Buffer): ApiError {
  let decoded: unknown;
  try { decoded = decode(headers['content-type'], body); } catch { decoded = undefined; }
  const extra: Record<string, string> = {};
  if (headers['retry-after']) extra['Retry-After'] = headers['retry-after'];
  if (isStatus(decoded)) {
    return new ApiError(decoded.code || status, decoded.reason ?? REASON_BY_CODE[status] ?? '', decoded.message ?? `the server responded with ${status}`, decoded.details, extra);
  }
  const text = body.toString('utf8').trim().split('\n')[0].slice(0, 500);
  return new ApiError(status, REASON_BY_CODE[status] ?? (status >= 500 ? 'InternalError' : ''), text || `the server responded with ${status}`, undefined, extra);
}

function retryAfterMs(headers: Record<string, string>): number | undefined {
  const v = headers['retry-after'];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (Number.isFinite(n) && n >= 0) return Math.min(n * 1000, MAX_RETRY_AFTER_MS);
  const d = Date.parse(v);
  return Number.isNaN(d) ? undefined : Math.min(Math.max(0, d - Date.now()), MAX_RETRY_AFTER_MS);
}

interface Opened { status: number; headers: Record<string, string>; body: import('node:stream').Readable; close(): void }

export class RestClient {
  readonly transport: Http2Transport;
  readonly limiter: TokenBucket;
  readonly contentType: ContentType;
  private readonly maxRetries: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly userAgent: string;
  private readonly ownsTransport: boolean;
  private readonly tokenSource: BearerTokenSource | undefined;

  constructor(opts: RestClientOptions) {
    this.ownsTransport = !opts.sharedTransport;
    this.tokenSource = opts.tokenSource;
    this.transport = opts.sharedTransport ?? new Http2Transport(opts.connection, opts.transport);
    this.clock = opts.clock ?? realClock;
    this.limiter = new TokenBucket({ qps: opts.qps ?? 20, burst: opts.burst ?? 30, clock: this.clock });
    const ct = (opts.contentType ?? PROTOBUF_MEDIA_TYPE).split(';')[0].trim().toLowerCase();
    if (ct !== PROTOBUF_MEDIA_TYPE && ct !== 'application/json') throw new Error(`unsupported API content type ${JSON.stringify(opts.contentType)}: use application/json or ${PROTOBUF_MEDIA_TYPE}`);
    this.contentType = ct;
    this.maxRetries = opts.maxRetries ?? 10;
    this.log = opts.log ?? pino({ level: 'silent' });
    this.userAgent = opts.userAgent ?? 'corectl';
  }

  private accept(): string {
    return this.contentType === PROTOBUF_MEDIA_TYPE ? `${PROTOBUF_MEDIA_TYPE}, application/json` : 'application/json';
  }

  private encodeBody(spec: RequestSpec): { body?: Buffer; contentType?: string } {
    if (spec.body === undefined) return {};
    if (spec.bodyContentType) {
      const b = Buffer.isBuffer(spec.body) ? spec.body : Buffer.from(typeof spec.body === 'string' ? spec.body : JSON.stringify(spec.body));
      return { body: b, contentType: spec.bodyContentType };
    }
    const obj = spec.body as KubeObject;
    if (this.contentType === PROTOBUF_MEDIA_TYPE && obj.apiVersion && obj.kind && messageForObject(obj.apiVersion, obj.kind)) {
      return { body: encodeProtobuf(obj), contentType: PROTOBUF_MEDIA_TYPE };
    }
    return { body: Buffer.from(JSON.stringify(obj)), contentType: 'application/json' };
  }

  /** Sends with rate limiting and retries; resolves on a non-retried response (any status). */
  private async open(spec: RequestSpec, rawPath?: string, accept?: string): Promise<Opened> {
    const { body, contentType } = this.encodeBody(spec);
    const path = rawPath ?? resourcePath(spec) + queryString(spec.query);
    const headers: Record<string, string> = { accept: accept ?? this.accept(), 'user-agent': this.userAgent };
    if (contentType) headers['content-type'] = contentType;
    const idempotent = IDEMPOTENT.has(spec.method);
    let refreshedToken = false;
    let otherServers = this.transport.servers.length - 1;
    for (let attempt = 0; ; attempt++) {
      await this.limiter.take(spec.signal);
      let wait: number | undefined;
      try {
        if (this.tokenSource) headers.authorization = `Bearer ${await this.tokenSource.token(spec.signal)}`;
        const res = await this.transport.request({ method: spec.method, path, headers, ...(body ? { body } : {}), ...(spec.signal ? { signal: spec.signal } : {}) });
        // A refused token (expired early, its account recreated): once more with a fresh one.
        // A 401 is answered before anything is done, so even a POST may be resent.
        if (res.status === 401 && this.tokenSource && !refreshedToken) {
          refreshedToken = true;
          this.tokenSource.reset();
          res.close();
          continue;
        }
        const ra = retryAfterMs(res.headers);
        if (res.status === 429) wait = ra ?? 1000;
        else if (res.status >= 500 && ra !== undefined && idempotent) wait = ra;
        if (res.status >= 500 && res.status !== 501) {
          this.transport.failover(res.server);
          if (idempotent && wait === undefined && otherServers > 0) { otherServers--; wait = 0; }
        }
        if (wait === undefined || attempt >= this.maxRetries) return res;
        res.close();
        this.log.debug({ method: spec.method, path, status: res.status, attempt, waitMs: wait }, 'retrying request');
      } catch (e) {
        if (!(e instanceof TransportError) || spec.signal?.aborted) throw e;
        if ((e.sent && !idempotent) || attempt >= this.maxRetries) throw e;
        wait = Math.min(200 * 2 ** attempt, 5000) * (0.5 + Math.random() / 2);
        this.log.debug({ method: spec.method, path, err: e.message, attempt, waitMs: wait }, 'retrying request after a network error');
      }
      await this.clock.sleep(wait, spec.signal);
    }
  }

  /**
   * GET of a path outside the resource tree (discovery documents, /version) with this client's
   * credentials, rate limit and retries; resolves any status with the whole body.
   */
  async getPath(path: string, opts: { accept?: string; signal?: AbortSignal } = {}): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const res = await this.open({ group: '', version: '', resource: '', method: 'GET', ...(opts.signal ? { signal: opts.signal } : {}) }, path, opts.accept);
    return { status: res.status, headers: res.headers, body: await readBody(res.body) };
  }

  /** One request; resolves the decoded body, throws ApiError on failure. */
  async request<T = KubeObject>(spec: RequestSpec): Promise<T> {
    const res = await this.open(spec);
    const buf = await readBody(res.body);
    if (res.status >= 300) throw errorFromResponse(res.status, res.headers, buf);
    return decode(res.headers['content-type'], buf) as T;
  }

  get<T extends KubeObject = KubeObject>(ref: ResourceRef, name: string, opts: { resourceVersion?: string; subresource?: string; signal?: AbortSignal } = {}): Promise<T> {
    return this.request<T>({ ...ref, method: 'GET', name, ...(opts.subresource ? { subresource: opts.subresource } : {}), query: { resourceVersion: opts.resourceVersion }, ...(opts.signal ? { signal: opts.signal } : {}) });
  }

  list<T extends KubeObject = KubeObject>(ref: ResourceRef, opts: ListOptions = {}): Promise<KubeList<T>> {
    const { signal, ...q } = opts;
    return this.request<KubeList<T>>({ ...ref, method: 'GET', query: q as Query, ...(signal ? { signal } : {}) });
  }

  create<T extends KubeObject = KubeObject>(ref: ResourceRef, obj: KubeObject, opts: WriteOptions & { subresource?: string; name?: string } = {}): Promise<T> {
    return this.request<T>({
      ...ref, method: 'POST', body: withTypeMeta(ref, obj), query: writeQuery(opts),
      ...(opts.name !== undefined ? { name: opts.name } : {}), ...(opts.subresource ? { subresource: opts.subresource } : {}), ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /** PUT; the object's resourceVersion (when set) makes it a compare-and-swap. */
  update<T extends KubeObject = KubeObject>(ref: ResourceRef, obj: KubeObject, opts: WriteOptions & { subresource?: string } = {}): Promise<T> {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`update of ${ref.resource} needs metadata.name`);
    return this.request<T>({ ...ref, method: 'PUT', name, body: withTypeMeta(ref, obj), query: writeQuery(opts), ...(opts.subresource ? { subresource: opts.subresource } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
  }

  patch<T extends KubeObject = KubeObject>(ref: ResourceRef, name: string, type: PatchType, patch: unknown, opts: WriteOptions & { subresource?: string; force?: boolean } = {}): Promise<T> {
    return this.request<T>({
      ...ref, method: 'PATCH', name, body: patch, bodyContentType: PATCH_TYPES[type],
      query: { ...writeQuery(opts), force: opts.force }, ...(opts.subresource ? { subresource: opts.subresource } : {}), ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  delete<T extends KubeObject = KubeObject>(ref: ResourceRef, name: string, opts: WriteOptions & { gracePeriodSeconds?: number; propagationPolicy?: string; preconditions?: { uid?: string; resourceVersion?: string } } = {}): Promise<T> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.dryRun) body.dryRun = ['All'];
    return this.request<T>({ ...ref, method: 'DELETE', name, body, bodyContentType: 'application/json', ...(opts.signal ? { signal: opts.signal } : {}) });
  }

  /**
   * Opens a watch; resolves once the server accepted it (errors such as 410 or 403 at open are
   * thrown here), then yields events until the server closes the stream or the signal aborts.
   */
  async watch(ref: ResourceRef, opts: ListOptions = {}): Promise<AsyncIterable<WatchEvent>> {
    const { signal, ...q } = opts;
    const res = await this.open({ ...ref, method: 'GET', query: { ...q, watch: true } as Query, ...(signal ? { signal } : {}) });
    if (res.status >= 300) throw errorFromResponse(res.status, res.headers, await readBody(res.body));
    const events = decodeWatchBody(res.headers['content-type'], res.body);
    return {
      [Symbol.asyncIterator]: () => {
        const it = events[Symbol.asyncIterator]();
        return {
          next: async () => {
            try {
              return await it.next();
            } catch (e) {
              if (signal?.aborted) return { done: true, value: undefined };
              throw e;
            }
          },
          return: async () => { res.close(); return it.return(undefined); },
        };
      },
    };
  }

  close(): void { if (this.ownsTransport) this.transport.close(); }
}

function writeQuery(o: WriteOptions): Query {
  return { dryRun: o.dryRun ? 'All' : undefined, fieldManager: o.fieldManager };
}
