/**
 * The operations of every served resource in one group/version, in a neutral form that v3.ts
 * and v2.ts render. Follows the layout of Kubernetes' documents: collection and item paths
 * (namespaced, plus the all-namespaces list), `/watch/` paths, and the status and scale
 * subresources. Patch operations carry `fieldValidation` and `x-kubernetes-group-version-kind`,
 * which kubectl reads to decide that the server validates fields itself.
 */
import { allResources } from '../resources/registry.js';
import type { ResourceDefinition } from '../resources/types.js';
import { schema } from '../schema/registry.js';

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
export const STATUS_MESSAGE = `${META}.Status`;
export const DELETE_OPTIONS_MESSAGE = `${META}.DeleteOptions`;
export const WATCH_EVENT_MESSAGE = `${META}.WatchEvent`;
export const PATCH_MESSAGE = `${META}.Patch`;
const STREAMING = new Set(['log', 'exec', 'attach', 'portforward', 'proxy']);
const SCALE_GVK = { group: 'autoscaling', version: 'v1', kind: 'Scale' };

export interface ParamDecl {
  readonly name: string;
  readonly in: 'query' | 'path';
  readonly type: 'string' | 'integer' | 'boolean';
  readonly description: string;
  readonly required?: boolean;
}

export interface GroupVersionKind { group: string; version: string; kind: string }

export interface OperationDecl {
  readonly method: 'get' | 'put' | 'post' | 'patch' | 'delete';
  readonly operationId: string;
  readonly description: string;
  readonly tag: string;
  /** x-kubernetes-action: get list watch watchlist post put patch delete deletecollection. */
  readonly action: string;
  readonly gvk: GroupVersionKind;
  readonly params: readonly ParamDecl[];
  /** Request body: an object of `bodyMessage`, a patch document, or DeleteOptions. */
  readonly body?: 'object' | 'patch' | 'delete';
  /** Patch bodies: false when strategic merge patch is not accepted (custom resources). */
  readonly strategicMerge?: boolean;
  readonly bodyMessage?: string;
  /** Status code -> message name of the response body (undefined: no schema). */
  readonly responses: Readonly<Record<string, string | undefined>>;
}

export interface PathDecl {
  readonly path: string;
  readonly params: readonly ParamDecl[];
  readonly operations: readonly OperationDecl[];
}

const q = (name: string, type: ParamDecl['type'], description: string): ParamDecl => ({ name, in: 'query', type, description });
const P = {
  name: { name: 'name', in: 'path', type: 'string', description: 'name of the object', required: true } as ParamDecl,
  namespace: { name: 'namespace', in: 'path', type: 'string', description: 'object name and auth scope, such as for teams and projects', required: true } as ParamDecl,
  pretty: q('pretty', 'string', "If 'true', then the output is pretty printed."),
  dryRun: q('dryRun', 'string', 'When present, modifications are not persisted. The only valid value is All.'),
  fieldManager: q('fieldManager', 'string', 'The name of the actor making the change, recorded in managedFields.'),
  fieldValidation: q('fieldValidation', 'string', 'How the server treats unknown and duplicate fields in the request body: Ignore, Warn (the default) or Strict.'),
  force: q('force', 'boolean', 'Apply requests only: take ownership of conflicting fields from other managers.'),
  gracePeriodSeconds: q('gracePeriodSeconds', 'integer', 'Seconds before the object is deleted; 0 deletes immediately.'),
  orphanDependents: q('orphanDependents', 'boolean', 'Deprecated: use propagationPolicy.'),
  propagationPolicy: q('propagationPolicy', 'string', 'Whether and how dependents are garbage collected: Orphan, Background or Foreground.'),
  allowWatchBookmarks: q('allowWatchBookmarks', 'boolean', 'Ask for BOOKMARK events on watches.'),
  continue: q('continue', 'string', 'The continue token of the previous page of a paged list.'),
  fieldSelector: q('fieldSelector', 'string', 'Restrict the returned objects by their fields.'),
  labelSelector: q('labelSelector', 'string', 'Restrict the returned objects by their labels.'),
  limit: q('limit', 'integer', 'The maximum number of objects to return in one page.'),
  resourceVersion: q('resourceVersion', 'string', 'The resource version the request is served at or after.'),
  resourceVersionMatch: q('resourceVersionMatch', 'string', 'How resourceVersion is applied to list calls.'),
  sendInitialEvents: q('sendInitialEvents', 'boolean', 'Start a watch with synthetic events for the current state.'),
  timeoutSeconds: q('timeoutSeconds', 'integer', 'Timeout for the list or watch call.'),
  watch: q('watch', 'boolean', 'Watch for changes to the described resources.'),
};
const LIST_PARAMS = [P.allowWatchBookmarks, P.continue, P.fieldSelector, P.labelSelector, P.limit, P.resourceVersion,
  P.resourceVersionMatch, P.sendInitialEvents, P.timeoutSeconds, P.watch];
const WRITE_PARAMS = [P.dryRun, P.fieldManager, P.fieldValidation];
const DELETE_PARAMS = [P.dryRun, P.gracePeriodSeconds, P.orphanDependents, P.propagationPolicy];

const cap = (s: string): string => (s ? s[0]!.toUpperCase() + s.slice(1) : s);

/** '' -> 'core', 'rbac.authorization.k8s.io' -> 'rbacAuthorization' (Kubernetes' tag words). */
function groupWord(group: string): string {
  if (!group) return 'core';
  const parts = group.replace(/\.k8s\.io$/, '').split('.');
  return parts[0]! + parts.slice(1).map(cap).join('');
}

/** Root path of a group/version: '/api/v1' or '/apis/apps/v1'. */
export function groupVersionPath(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

function resourcePaths(def: ResourceDefinition, version: string): PathDecl[] {
  const root = groupVersionPath(def.group, version);
  const gvk = { group: def.group, version, kind: def.kind };
  const own = def.openApi?.names(version);
  // kubectl reads the patch media types to choose its patch: custom resources take no strategic merge.
  const smp = own ? { strategicMerge: false } : {};
  const kindMsg = own ? own.kind : schema.forKind(def.group, version, def.kind)?.name;
  const listMsg = own ? own.list : schema.forKind(def.group, version, def.listKind)?.name;
  const tag = `${groupWord(def.group)}_${version}`;
  const id = (verb: string, suffix = ''): string =>
    `${verb}${cap(groupWord(def.group))}${cap(version)}${def.namespaced ? 'Namespaced' : ''}${def.kind}${suffix}`;
  const has = (v: string): boolean => def.verbs.includes(v);
  const nsPart = def.namespaced ? '/namespaces/{namespace}' : '';
  const scopeParams = def.namespaced ? [P.namespace] : [];
  const out: PathDecl[] = [];
  const coll: OperationDecl[] = [];
  if (has('list')) coll.push({ method: 'get', operationId: id('list'), description: `list or watch objects of kind ${def.kind}`, tag, action: 'list', gvk, params: LIST_PARAMS, responses: { '200': listMsg } });
  if (has('create')) coll.push({ method: 'post', operationId: id('create'), description: `create a ${def.kind}`, tag, action: 'post', gvk, params: WRITE_PARAMS, body: 'object', bodyMessage: kindMsg, responses: { '200': kindMsg, '201': kindMsg, '202': kindMsg } });
  if (has('deletecollection')) coll.push({ method: 'delete', operationId: id('deletecollection'), description: `delete collection of ${def.kind}`, tag, action: 'deletecollection', gvk, params: [...LIST_PARAMS.filter((p) => p.name !== 'watch' && p.name !== 'allowWatchBookmarks'), ...DELETE_PARAMS], body: 'delete', bodyMessage: DELETE_OPTIONS_MESSAGE, responses: { '200': STATUS_MESSAGE } });
  if (coll.length) out.push({ path: `${root}${nsPart}/${def.plural}`, params: [...scopeParams, P.pretty], operations: coll });
  const item: OperationDecl[] = [];
  if (has('get')) item.push({ method: 'get', operationId: id('read'), description: `read the specified ${def.kind}`, tag, action: 'get', gvk, params: [], responses: { '200': kindMsg } });
  if (has('update')) item.push({ method: 'put', operationId: id('replace'), description: `replace the specified ${def.kind}`, tag, action: 'put', gvk, params: WRITE_PARAMS, body: 'object', bodyMessage: kindMsg, responses: { '200': kindMsg, '201': kindMsg } });
  if (has('patch')) item.push({ method: 'patch', operationId: id('patch'), description: `partially update the specified ${def.kind}`, tag, action: 'patch', gvk, params: [...WRITE_PARAMS, P.force], body: 'patch', ...smp, responses: { '200': kindMsg, '201': kindMsg } });
  if (has('delete')) item.push({ method: 'delete', operationId: id('delete'), description: `delete a ${def.kind}`, tag, action: 'delete', gvk, params: DELETE_PARAMS, body: 'delete', bodyMessage: DELETE_OPTIONS_MESSAGE, responses: { '200': STATUS_MESSAGE, '202': STATUS_MESSAGE } });
  if (item.length) out.push({ path: `${root}${nsPart}/${def.plural}/{name}`, params: [P.name, ...scopeParams, P.pretty], operations: item });
  if (def.namespaced && has('list')) {
    out.push({ path: `${root}/${def.plural}`, params: [P.pretty], operations: [{ method: 'get', operationId: `list${cap(groupWord(def.group))}${cap(version)}${def.kind}ForAllNamespaces`, description: `list or watch objects of kind ${def.kind}`, tag, action: 'list', gvk, params: LIST_PARAMS, responses: { '200': listMsg } }] });
  }
  if (has('watch')) {
    const w = (suffix: string, action: string, what: string): OperationDecl => ({ method: 'get', operationId: id('watch', suffix), description: what, tag, action, gvk, params: LIST_PARAMS, responses: { '200': WATCH_EVENT_MESSAGE } });
    out.push({ path: `${root}/watch${nsPart}/${def.plural}`, params: [...scopeParams, P.pretty], operations: [w('List', 'watchlist', `watch individual changes to a list of ${def.kind}`)] });
    out.push({ path: `${root}/watch${nsPart}/${def.plural}/{name}`, params: [P.name, ...scopeParams, P.pretty], operations: [w('', 'watch', `watch changes to an object of kind ${def.kind}`)] });
  }
  const sub = (name: string, subGvk: GroupVersionKind, msg: string | undefined): void => {
    const ops: OperationDecl[] = [
      { method: 'get', operationId: id('read', cap(name)), description: `read ${name} of the specified ${def.kind}`, tag, action: 'get', gvk: subGvk, params: [], responses: { '200': msg } },
      { method: 'put', operationId: id('replace', cap(name)), description: `replace ${name} of the specified ${def.kind}`, tag, action: 'put', gvk: subGvk, params: WRITE_PARAMS, body: 'object', bodyMessage: msg, responses: { '200': msg, '201': msg } },
      { method: 'patch', operationId: id('patch', cap(name)), description: `partially update ${name} of the specified ${def.kind}`, tag, action: 'patch', gvk: subGvk, params: [...WRITE_PARAMS, P.force], body: 'patch', ...smp, responses: { '200': msg, '201': msg } },
    ];
    out.push({ path: `${root}${nsPart}/${def.plural}/{name}/${name}`, params: [P.name, ...scopeParams, P.pretty], operations: ops });
  };
  if (def.subresources?.status) sub('status', gvk, kindMsg);
  if (def.subresources?.scale) sub('scale', SCALE_GVK, schema.forKind('autoscaling', 'v1', 'Scale')?.name);
  // Other object-valued subresources (binding, eviction, token, approval, finalize); streaming
  // ones (log, exec, attach, portforward, proxy) take no object body and are left out.
  for (const x of def.subresources?.extra ?? []) {
    if (!x.kind || STREAMING.has(x.name)) continue;
    const msg = schema.forKind(x.kind.group, x.kind.version, x.kind.kind)?.name;
    const ops: OperationDecl[] = [];
    const base = { tag, gvk: x.kind };
    if (x.verbs.includes('get')) ops.push({ ...base, method: 'get', operationId: id('read', cap(x.name)), description: `read ${x.name} of the specified ${def.kind}`, action: 'get', params: [], responses: { '200': msg } });
    if (x.verbs.includes('create')) ops.push({ ...base, method: 'post', operationId: id('create', cap(x.name)), description: `create ${x.name} of a ${def.kind}`, action: 'post', params: WRITE_PARAMS, body: 'object', bodyMessage: msg, responses: { '200': msg, '201': msg, '202': msg } });
    if (x.verbs.includes('update')) ops.push({ ...base, method: 'put', operationId: id('replace', cap(x.name)), description: `replace ${x.name} of the specified ${def.kind}`, action: 'put', params: WRITE_PARAMS, body: 'object', bodyMessage: msg, responses: { '200': msg, '201': msg } });
    if (x.verbs.includes('patch')) ops.push({ ...base, method: 'patch', operationId: id('patch', cap(x.name)), description: `partially update ${x.name} of the specified ${def.kind}`, action: 'patch', params: [...WRITE_PARAMS, P.force], body: 'patch', ...smp, responses: { '200': msg, '201': msg } });
    if (ops.length) out.push({ path: `${root}${nsPart}/${def.plural}/{name}/${x.name}`, params: [P.name, ...scopeParams, P.pretty], operations: ops });
  }
  return out;
}

/** Definitions serving a group/version (optionally filtered by an enablement check). */
export function resourcesIn(group: string, version: string, enabled?: (def: ResourceDefinition, version: string) => boolean): ResourceDefinition[] {
  return allResources().filter((d) => d.group === group && d.versions.includes(version) && (!enabled || enabled(d, version)));
}

/** Every served group/version, core first, as {group, version}. */
export function servedGroupVersions(enabled?: (def: ResourceDefinition, version: string) => boolean): GroupVersionKind[] {
  const seen = new Map<string, { group: string; version: string; kind: string }>();
  for (const d of allResources()) {
    for (const v of d.versions) {
      if (enabled && !enabled(d, v)) continue;
      const key = `${d.group}/${v}`;
      if (!seen.has(key)) seen.set(key, { group: d.group, version: v, kind: '' });
    }
  }
  return [...seen.values()];
}

/** The paths of one group/version, sorted by path. */
export function groupVersionPaths(group: string, version: string, enabled?: (def: ResourceDefinition, version: string) => boolean): PathDecl[] {
  const out = resourcesIn(group, version, enabled).flatMap((d) => resourcePaths(d, version));
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

/** The schemas custom resources of one group/version (or of all, when group is undefined) bring along. */
export function customSchemas(flavor: 'v2' | 'v3', enabled?: (def: ResourceDefinition, version: string) => boolean, group?: string, version?: string): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const d of allResources()) {
    if (!d.openApi || (group !== undefined && d.group !== group)) continue;
    for (const v of d.versions) {
      if ((version !== undefined && v !== version) || (enabled && !enabled(d, v))) continue;
      for (const [name, s] of Object.entries(d.openApi.schemas(v, flavor))) out.set(name, s);
    }
  }
  return out;
}

/** Message names a set of paths refers to (bodies and responses), for the schema walk. */
export function messagesOfPaths(paths: readonly PathDecl[]): Set<string> {
  const out = new Set<string>([STATUS_MESSAGE, DELETE_OPTIONS_MESSAGE, WATCH_EVENT_MESSAGE, PATCH_MESSAGE]);
  for (const p of paths) {
    for (const op of p.operations) {
      if (op.bodyMessage) out.add(op.bodyMessage);
      for (const m of Object.values(op.responses)) if (m) out.add(m);
    }
  }
  return out;
}
