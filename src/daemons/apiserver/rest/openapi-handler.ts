/**
 * Serves the OpenAPI documents: `/openapi/v2` (JSON, or the gnostic protobuf kubectl 1.27/1.28
 * ask for) and `/openapi/v3` (the index and one document per group/version, with content
 * hashes in the URLs). Documents are generated on first request and kept: the schema and the
 * resource registry do not change while the server runs (call `invalidate()` if they do).
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Logger } from 'pino';
import { pino } from 'pino';
import { ApiError, errors } from '../../../api/meta/status.js';
import { buildOpenApiV2 } from '../../../api/openapi/v2.js';
import { encodeOpenApiV2, OPENAPI_V2_PROTOBUF_CONTENT_TYPE } from '../../../api/openapi/v2-protobuf.js';
import { buildAllGroupVersionsV3, buildIndexV3, type Enabled } from '../../../api/openapi/v3.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import type { RestHandler } from '../chain.js';
import { writeError } from './http-io.js';

export interface OpenApiHandlerOptions {
  /** Which resources/versions are served (--runtime-config); all when absent. */
  enabled?: Enabled;
  log?: Logger;
}

interface Body { bytes: Buffer; gzipped?: Buffer; hash: string; contentType: string }

/**
 * OpenAPI of extension servers (the aggregator's copies of their documents): `generation`
 * changes whenever any of them does; `v2` gives the paths and definitions to merge into
 * /openapi/v2; `v3` the documents by key (`apis/<group>/<version>`).
 */
export interface ExternalOpenApi {
  generation(): number;
  v2(): readonly { paths: Record<string, unknown>; definitions: Record<string, unknown> }[];
  v3(): ReadonlyMap<string, Buffer>;
}

function body(bytes: Buffer | Uint8Array, contentType: string): Body {
  const b = Buffer.from(bytes);
  return { bytes: b, contentType, hash: createHash('sha512').update(b).digest('hex').toUpperCase() };
}

const IMMUTABLE = 'public, immutable';
const MUTABLE = 'no-cache, private';

export class OpenApiHandler {
  private v3?: { index: Body; docs: Map<string, Body> };
  private v2json?: Body;
  private v2pb?: Body;
  private readonly log: Logger;
  private external: ExternalOpenApi | undefined;
  private externalGeneration = -1;

  constructor(private readonly opts: OpenApiHandlerOptions = {}) {
    this.log = opts.log ?? pino({ level: 'silent' });
  }

  /** True for the paths this handler answers. */
  handles(path: string): boolean {
    return path === '/openapi/v2' || path === '/openapi/v3' || path.startsWith('/openapi/v3/');
  }

  /** Extension servers' documents, merged in (the aggregator's). */
  setExternal(external: ExternalOpenApi): void {
    this.external = external;
    this.invalidate();
  }

  /** Drops the documents when an extension server's changed since they were made. */
  private refreshExternal(): void {
    const g = this.external?.generation() ?? -1;
    if (g !== this.externalGeneration) { this.externalGeneration = g; this.invalidate(); }
  }

  /** Drops the generated documents (e.g. after registering a resource). */
  invalidate(): void {
    this.v3 = undefined; this.v2json = undefined; this.v2pb = undefined;
  }

  private v3Docs(): { index: Body; docs: Map<string, Body> } {
    this.refreshExternal();
    if (!this.v3) {
      const docs = new Map<string, Body>();
      for (const [key, doc] of buildAllGroupVersionsV3(this.opts.enabled)) docs.set(key, body(Buffer.from(JSON.stringify(doc)), 'application/json'));
      for (const [key, bytes] of this.external?.v3() ?? []) if (!docs.has(key)) docs.set(key, body(bytes, 'application/json'));
      const hashes = new Map([...docs].map(([k, b]) => [k, b.hash]));
      this.v3 = { index: body(Buffer.from(JSON.stringify(buildIndexV3(hashes))), 'application/json'), docs };
      this.log.debug({ groupVersions: docs.size }, 'generated OpenAPI v3 documents');
    }
    return this.v3;
  }

  private v2(protobuf: boolean): Body {
    this.refreshExternal();
    if (protobuf) {
      this.v2pb ??= body(encodeOpenApiV2(this.v2Document()), OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
      return this.v2pb;
    }
    this.v2json ??= body(Buffer.from(JSON.stringify(this.v2Document())), 'application/json');
    return this.v2json;
  }

  /** Our document with the extension servers' paths and definitions added (ours win on a clash). */
  private v2Document(): ReturnType<typeof buildOpenApiV2> {
    const doc = buildOpenApiV2(this.opts.enabled);
    const parts = this.external?.v2() ?? [];
    if (!parts.length) return doc;
    const paths = { ...(doc.paths as Record<string, unknown>) };
    const definitions = { ...(doc.definitions as Record<string, unknown>) };
    for (const p of parts) {
      for (const [k, v] of Object.entries(p.paths)) if (!(k in paths)) paths[k] = v;
      for (const [k, v] of Object.entries(p.definitions)) if (!(k in definitions)) definitions[k] = v;
    }
    const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
    return { ...doc, paths: sorted, definitions };
  }

  /** Answers one request for a path `handles` accepted. */
  serve(req: ApiRequest, res: ApiResponse, path: string, query: URLSearchParams): void {
    try {
      const method = (req.method ?? 'GET').toUpperCase();
      if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed(method, path);
      const accept = String(req.headers['accept'] ?? '');
      if (path === '/openapi/v2') {
        const wantsPb = accept.includes('com.github.proto-openapi.spec.v2');
        const wantsJson = !accept || /application\/json|\*\/\*|application\/\*/.test(accept);
        if (!wantsPb && !wantsJson) throw errors.notAcceptable(accept, ['application/json', OPENAPI_V2_PROTOBUF_CONTENT_TYPE]);
        // Prefer protobuf when asked for it at all: kubectl lists it first, JSON never parses there.
        this.send(req, res, this.v2(wantsPb), MUTABLE);
        return;
      }
      const v3 = this.v3Docs();
      if (path === '/openapi/v3' || path === '/openapi/v3/') { this.send(req, res, v3.index, MUTABLE); return; }
      const key = path.slice('/openapi/v3/'.length).replace(/\/+$/, '');
      const doc = v3.docs.get(key);
      if (!doc) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
      const hash = query.get('hash');
      if (hash !== null && hash !== doc.hash) {
        // An outdated hash: send the client to the current document (as Kubernetes does).
        res.statusCode = 301;
        res.setHeader('Location', `/openapi/v3/${key}?hash=${doc.hash}`);
        res.setHeader('Cache-Control', MUTABLE);
        res.end();
        return;
      }
      this.send(req, res, doc, hash !== null ? IMMUTABLE : MUTABLE);
    } catch (e) {
      writeError(res, e instanceof ApiError ? e : errors.internal(e instanceof Error ? e.message : String(e), e));
    }
  }

  private send(req: ApiRequest, res: ApiResponse, b: Body, cacheControl: string): void {
    const etag = `"${b.hash}"`;
    res.setHeader('ETag', etag);
    res.setHeader('Vary', 'Accept');
    res.setHeader('Cache-Control', cacheControl);
    if (cacheControl === IMMUTABLE) res.setHeader('Expires', new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString());
    const inm = req.headers['if-none-match'];
    if (typeof inm === 'string' && inm.split(',').map((s) => s.trim()).includes(etag)) {
      res.statusCode = 304;
      res.end();
      return;
    }
    let payload = b.bytes;
    if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')) && payload.length > 128 * 1024) {
      b.gzipped ??= gzipSync(payload);
      payload = b.gzipped;
      res.setHeader('Content-Encoding', 'gzip');
    }
    res.statusCode = 200;
    res.setHeader('Content-Type', b.contentType);
    res.setHeader('Content-Length', String(payload.length));
    if ((req.method ?? 'GET').toUpperCase() === 'HEAD') res.end(); else res.end(payload);
  }
}

/**
 * Wraps a REST handler so `/openapi/...` is answered first (one line where the REST layer is
 * handed to the serving chain): `rest = withOpenApi(rest, new OpenApiHandler(...))`.
 */
export function withOpenApi<T extends RestHandler>(rest: T, openapi: OpenApiHandler): T {
  const inner = rest.handle.bind(rest);
  const handle = async (ctx: RequestContext, req: ApiRequest, res: ApiResponse): Promise<void> => {
    if (!ctx.info.isResourceRequest && openapi.handles(ctx.info.path)) { openapi.serve(req, res, ctx.info.path, ctx.query); return; }
    await inner(ctx, req, res);
  };
  return Object.assign(rest, { handle });
}
