/**
 * OpenAPI v2 (Swagger 2.0): one document for every served group/version, the form kubectl
 * 1.27/1.28 read (as protobuf, see v2-protobuf.ts) for field-validation support, `explain` and
 * client-side strategic-merge patch metadata.
 */
import { collectSchemas, refTo, type JsonSchema } from './schemas.js';
import { customSchemas, groupVersionPaths, messagesOfPaths, servedGroupVersions, type OperationDecl, type ParamDecl, type PathDecl } from './paths.js';
import { OPENAPI_INFO, patchMedia, type Enabled } from './v3.js';

const OBJECT_MEDIA = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];
const WATCH_MEDIA = [...OBJECT_MEDIA, 'application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch'];

function paramV2(p: ParamDecl): JsonSchema {
  const out: JsonSchema = { uniqueItems: true, type: p.type, description: p.description, name: p.name, in: p.in };
  if (p.required) out.required = true;
  return out;
}

function operationV2(op: OperationDecl): JsonSchema {
  const out: JsonSchema = { description: op.description, operationId: op.operationId, tags: [op.tag] };
  out.consumes = op.body === 'patch' ? [...patchMedia(op)] : ['*/*'];
  out.produces = op.action === 'list' || op.action.startsWith('watch') ? [...WATCH_MEDIA] : [...OBJECT_MEDIA];
  out.schemes = ['https'];
  const params: JsonSchema[] = [];
  if (op.body === 'patch') params.push({ name: 'body', in: 'body', required: true, schema: refTo('k8s.io.apimachinery.pkg.apis.meta.v1.Patch', 'v2') });
  else if (op.body && op.bodyMessage) params.push({ name: 'body', in: 'body', ...(op.body === 'object' ? { required: true } : {}), schema: refTo(op.bodyMessage, 'v2') });
  params.push(...op.params.map(paramV2));
  if (params.length) out.parameters = params;
  const responses: JsonSchema = {};
  for (const [code, msg] of Object.entries(op.responses)) {
    responses[code] = { description: code === '201' ? 'Created' : code === '202' ? 'Accepted' : 'OK', schema: msg ? refTo(msg, 'v2') : { type: 'object' } };
  }
  responses['401'] = { description: 'Unauthorized' };
  out.responses = responses;
  out['x-kubernetes-action'] = op.action;
  out['x-kubernetes-group-version-kind'] = { group: op.gvk.group, kind: op.gvk.kind, version: op.gvk.version };
  return out;
}

export function pathsV2(paths: readonly PathDecl[]): JsonSchema {
  const out: JsonSchema = {};
  for (const p of paths) {
    const item: JsonSchema = {};
    for (const op of p.operations) item[op.method] = operationV2(op);
    if (p.params.length) item.parameters = p.params.map(paramV2);
    out[p.path] = item;
  }
  return out;
}

/** The whole Swagger 2.0 document. */
export function buildOpenApiV2(enabled?: Enabled): JsonSchema {
  const all: PathDecl[] = [];
  for (const gv of servedGroupVersions(enabled)) all.push(...groupVersionPaths(gv.group, gv.version, enabled));
  all.sort((a, b) => a.path.localeCompare(b.path));
  return {
    swagger: '2.0',
    info: { ...OPENAPI_INFO },
    paths: pathsV2(all),
    definitions: collectSchemas(messagesOfPaths(all), 'v2', customSchemas('v2', enabled)),
    securityDefinitions: { BearerToken: { description: 'Bearer Token authentication', type: 'apiKey', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  };
}
