/** GET of one object and LIST of a collection (selectors, paging, resourceVersion semantics). */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { isResourceVersion } from '../../../storage/resource-version.js';
import { getFromEntry, listFromEntries, listItem } from './entry-reads.js';
import { writeObject } from './http-io.js';
import { partialList } from './partial-metadata.js';
import { outputFormat, respondObject, servedApiVersion, toServed, type Scope } from './scope.js';
import { buildMatcher, exactName } from './selector-dispatch.js';
import { buildTable, parseIncludeObject } from './table.js';

export async function handleGet(s: Scope): Promise<void> {
  const fmt = outputFormat(s);
  if (s.warnings.length === 0 && await getFromEntry(s, fmt)) return;
  const obj = await s.registry.get(s.def, s.namespace, s.name, s.query.get('resourceVersion') ?? undefined);
  respondObject(s, 200, obj, fmt);
}

export interface ListParams {
  name?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  filter?: (o: KubeObject) => boolean;
}

export function parseListParams(s: Scope): ListParams {
  const q = s.query;
  const p: ListParams = {};
  const limit = q.get('limit');
  if (limit !== null && limit !== '') {
    if (!/^-?\d+$/.test(limit)) throw errors.badRequest(`limit: Invalid value: ${JSON.stringify(limit)}: must be an integer`);
    const n = Number(limit);
    if (n > 0) p.limit = n;
  }
  const cont = q.get('continue');
  const rv = q.get('resourceVersion');
  const match = q.get('resourceVersionMatch');
  if (cont) {
    if (rv !== null && rv !== '' && rv !== '0') throw errors.badRequest('specifying resource version is not allowed when using continue');
    p.continue = cont;
  }
  if (rv !== null && rv !== '') {
    if (!isResourceVersion(rv)) throw errors.badRequest(`resourceVersion: Invalid value: ${JSON.stringify(rv)}: must be a non-negative integer`);
    if (!cont) p.resourceVersion = rv;
  }
  if (match !== null && match !== '') {
    if (match !== 'NotOlderThan' && match !== 'Exact') throw errors.badRequest(`resourceVersionMatch: Unsupported value: ${JSON.stringify(match)}: supported values: "Exact", "NotOlderThan"`);
    if (rv === null || rv === '') throw errors.badRequest('resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided');
    if (match === 'Exact' && rv === '0') throw errors.badRequest('resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
    p.resourceVersionMatch = match;
  }
  const filter = buildMatcher(s.def, q.get('labelSelector'), q.get('fieldSelector'));
  if (filter) p.filter = filter;
  // metadata.name=x pins one key: read it instead of scanning (the filter still applies).
  const name = filter ? exactName(q.get('fieldSelector')) : undefined;
  if (name && (!s.def.namespaced || s.namespace)) p.name = name;
  return p;
}

export async function handleList(s: Scope): Promise<void> {
  const fmt = outputFormat(s);
  const p = parseListParams(s);
  if (await listFromEntries(s, p, fmt)) return;
  const res = await s.registry.list(s.def, { namespace: s.namespace, ...p });
  const metadata: Record<string, unknown> = { resourceVersion: res.resourceVersion };
  if (res.continue) metadata.continue = res.continue;
  if (res.remainingItemCount !== undefined && res.continue) metadata.remainingItemCount = res.remainingItemCount;
  if (fmt.target === 'table') {
    const table = buildTable(s.def, res.items.map((o) => ({ stored: s.registry.tableSource(s.def, o), served: toServed(s, o) })), {
      include: parseIncludeObject(s.query.get('includeObject')), metaVersion: fmt.asVersion ?? 'v1',
      resourceVersion: res.resourceVersion, continue: res.continue, remainingItemCount: res.continue ? res.remainingItemCount : undefined,
    });
    writeObject(s.res, 200, table, fmt);
    return;
  }
  if (fmt.target === 'partial') {
    writeObject(s.res, 200, partialList(res.items.map((o) => toServed(s, o)), metadata, fmt.asVersion), fmt);
    return;
  }
  const items = res.items.map((o) => listItem(s, o));
  writeObject(s.res, 200, { kind: s.def.listKind, apiVersion: servedApiVersion(s), metadata, items }, fmt);
}
