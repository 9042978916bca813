/**
 * OpenAPI v3: the discovery index (`/openapi/v3`) and one OpenAPI 3.0 document per served
 * group/version (`/openapi/v3/api/v1`, `/openapi/v3/apis/apps/v1` ...), generated from the
 * resource registry and the schema registry.
 */
import type { ResourceDefinition } from '../resources/types.js';
import { collectSchemas, refTo, type JsonSchema } from './schemas.js';
import { customSchemas, groupVersionPaths, messagesOfPaths, servedGroupVersions, type OperationDecl, type ParamDecl, type PathDecl } from './paths.js';

export const OPENAPI_INFO = { title: 'Kubernetes', version: 'v1.33.0' };

const OBJECT_MEDIA = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];
const WATCH_MEDIA = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf',
  'application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch'];
export const PATCH_MEDIA = ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json',
  'application/strategic-merge-patch+json'];

export type Enabled = (def: ResourceDefinition, version: string) => boolean;

/** The index key of a group/version: 'api/v1', 'apis/apps/v1'. */
export function groupVersionKey(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

function paramV3(p: ParamDecl): JsonSchema {
  const out: JsonSchema = { name: p.name, in: p.in, description: p.description };
  if (p.required) out.required = true;
  out.schema = { type: p.type, uniqueItems: true };
  return out;
}

/** The patch media types an operation accepts. */
export function patchMedia(op: OperationDecl): readonly string[] {
  return op.strategicMerge === false ? PATCH_MEDIA.filter((m) => m !== 'application/strategic-merge-patch+json') : PATCH_MEDIA;
}

function content(media: readonly string[], s: JsonSchema): JsonSchema {
  return Object.fromEntries(media.map((m) => [m, { schema: s }]));
}

function operationV3(op: OperationDecl): JsonSchema {
  const out: JsonSchema = { tags: [op.tag], description: op.description, operationId: op.operationId };
  if (op.params.length) out.parameters = op.params.map(paramV3);
  if (op.body === 'patch') {
    out.requestBody = { content: content(patchMedia(op), refTo('k8s.io.apimachinery.pkg.apis.meta.v1.Patch', 'v3')), required: true };
  } else if (op.body && op.bodyMessage) {
    out.requestBody = { content: { '*/*': { schema: refTo(op.bodyMessage, 'v3') } }, ...(op.body === 'object' ? { required: true } : {}) };
  }
  const responses: JsonSchema = {};
  for (const [code, msg] of Object.entries(op.responses)) {
    const desc = code === '201' ? 'Created' : code === '202' ? 'Accepted' : 'OK';
    const media = op.action === 'watch' || op.action === 'watchlist' || op.action === 'list' ? WATCH_MEDIA : OBJECT_MEDIA;
    responses[code] = { description: desc, content: content(media, msg ? refTo(msg, 'v3') : { type: 'object' }) };
  }
  responses['401'] = { description: 'Unauthorized' };
  out.responses = responses;
  out['x-kubernetes-action'] = op.action;
  out['x-kubernetes-group-version-kind'] = { group: op.gvk.group, kind: op.gvk.kind, version: op.gvk.version };
  return out;
}

/** Renders neutral paths in OpenAPI 3.0 form. */
export function pathsV3(paths: readonly PathDecl[]): JsonSchema {
  const out: JsonSchema = {};
  for (const p of paths) {
    const item: JsonSchema = {};
    for (const op of p.operations) item[op.method] = operationV3(op);
    if (p.params.length) item.parameters = p.params.map(paramV3);
    out[p.path] = item;
  }
  return out;
}

/** The OpenAPI 3.0 document of one group/version, or undefined when nothing is served there. */
export function buildGroupVersionV3(group: string, version: string, enabled?: Enabled): JsonSchema | undefined {
  const paths = groupVersionPaths(group, version, enabled);
  if (!paths.length) return undefined;
  return {
    openapi: '3.0.0',
    info: { ...OPENAPI_INFO },
    paths: pathsV3(paths),
    components: {
      schemas: collectSchemas(messagesOfPaths(paths), 'v3', customSchemas('v3', enabled, group, version)),
      securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    },
    security: [{ BearerToken: [] }],
  };
}

/** Every served group/version's document, keyed by index key ('api/v1', 'apis/apps/v1'). */
export function buildAllGroupVersionsV3(enabled?: Enabled): Map<string, JsonSchema> {
  const out = new Map<string, JsonSchema>();
  for (const gv of servedGroupVersions(enabled)) {
    const doc = buildGroupVersionV3(gv.group, gv.version, enabled);
    if (doc) out.set(groupVersionKey(gv.group, gv.version), doc);
  }
  return out;
}

/** The `/openapi/v3` index: each key's document URL carries its content hash. */
export function buildIndexV3(hashes: ReadonlyMap<string, string>): JsonSchema {
  const paths: JsonSchema = {};
  for (const key of [...hashes.keys()].sort()) paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hashes.get(key)}` };
  return { paths };
}
