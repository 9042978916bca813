/**
 * A resource request's scope: which definition and version it addresses, how to convert
 * between the served version and the definition's storage form, and how to answer.
 */
import { errors } from '../../../api/meta/status.js';
import { apiVersionOf, type KubeObject, type ResourceDefinition } from '../../../api/resources/types.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import { writeObject } from './http-io.js';
import { negotiateOutput, type OutputFormat } from './negotiate.js';
import { partialObject } from './partial-metadata.js';
import { buildTable, parseIncludeObject } from './table.js';
import { queryBool } from '../request-info.js';
import { warningHeaderValues } from '../../../api/codec/warning-header.js';

export interface Scope {
  ctx: RequestContext;
  req: ApiRequest;
  res: ApiResponse;
  def: ResourceDefinition;
  version: string;
  namespace: string;
  name: string;
  subresource: string;
  registry: ResourceRegistry;
  query: URLSearchParams;
  /** Warnings to send as `Warning: 299 - "..."` headers. */
  warnings: string[];
}

export function servedApiVersion(s: Scope): string {
  return apiVersionOf(s.def.group, s.version);
}

/** True when serving converts the def form (another version, or a resource stored as another). */
export function convertsOnServe(s: Scope): boolean {
  return s.def.convert !== undefined && (s.version !== s.def.storageVersion || s.def.storage !== undefined);
}

/** Def form → the requested version, with kind and apiVersion set. */
export function toServed(s: Scope, obj: KubeObject): KubeObject {
  let out = obj;
  if (convertsOnServe(s)) out = s.def.convert!(obj, s.version);
  const { apiVersion: _a, kind: _k, ...rest } = out;
  void _a; void _k;
  return { kind: s.def.kind, apiVersion: servedApiVersion(s), ...rest };
}

/** A request body in the served version → def form; 400 on a kind or apiVersion mismatch. */
export function fromRequest(s: Scope, obj: KubeObject): KubeObject {
  const expected = servedApiVersion(s);
  if (obj.apiVersion !== undefined && obj.apiVersion !== '' && obj.apiVersion !== expected) {
    throw errors.badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${expected})`);
  }
  if (obj.kind !== undefined && obj.kind !== '' && obj.kind !== s.def.kind) {
    throw errors.badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${s.def.kind})`);
  }
  const withType: KubeObject = { ...obj, apiVersion: expected, kind: s.def.kind };
  if (s.def.convert && (s.version !== s.def.storageVersion)) return s.def.convert(withType, s.def.storageVersion);
  return withType;
}

export function outputFormat(s: Scope): OutputFormat {
  return negotiateOutput(headerOf(s.req, 'accept'), 'resource', { protobuf: true, pretty: queryBool(s.query.get('pretty')) === true });
}

export function headerOf(req: ApiRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** One `Warning: 299 - "..."` header per warning, as Kubernetes sends them. */
export function warningHeaders(s: Scope): Record<string, string | string[]> {
  if (!s.warnings.length) return {};
  const values = warningHeaderValues(s.warnings);
  return values.length ? { Warning: values } : {};
}

/** Writes one object (def form) in the negotiated shape: object, Table row or metadata. */
export function respondObject(s: Scope, code: number, obj: KubeObject, fmt: OutputFormat = outputFormat(s)): void {
  const served = toServed(s, obj);
  let body: unknown = served;
  if (fmt.target === 'table') {
    body = buildTable(s.def, [{ stored: s.registry.tableSource(s.def, obj), served }], {
      include: parseIncludeObject(s.query.get('includeObject')), metaVersion: fmt.asVersion ?? 'v1',
      resourceVersion: obj.metadata?.resourceVersion,
    });
  } else if (fmt.target === 'partial') {
    body = partialObject(served, fmt.asVersion);
  }
  writeObject(s.res, code, body, fmt, warningHeaders(s));
}

/** Writes a non-resource body (Status, Scale ...) as JSON/YAML. */
export function respondRaw(s: Scope, code: number, body: unknown): void {
  let fmt = outputFormat(s);
  if (fmt.target !== 'object') fmt = { mediaType: 'application/json', target: 'object', pretty: fmt.pretty };
  writeObject(s.res, code, body, fmt, warningHeaders(s));
}

export function successStatus(details?: Record<string, unknown>): Record<string, unknown> {
  const st: Record<string, unknown> = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' };
  if (details) st.details = details;
  return st;
}

/** dryRun=All (the only accepted value) → true. */
export function parseDryRun(q: URLSearchParams, bodyValues?: unknown): boolean {
  const values = [...q.getAll('dryRun'), ...(Array.isArray(bodyValues) ? bodyValues.map(String) : [])];
  for (const v of values) if (v !== 'All') throw errors.badRequest(`Invalid dry run value: ${JSON.stringify(v)}: supported values: "All"`);
  return values.length > 0;
}
