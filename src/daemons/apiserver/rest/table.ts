/** meta.k8s.io Table responses (kubectl get's human output) from a definition's columns. */
import type { KubeObject, ResourceDefinition, TableColumn } from '../../../api/resources/types.js';
import { ageColumn } from '../../../api/resources/common/table-util.js';
import { partialObject } from './partial-metadata.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

const NAME_COLUMN: TableColumn = {
  name: 'Name', type: 'string', format: 'name', priority: 0,
  description: 'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
  cell: (o) => o.metadata?.name ?? '',
};

export function columnsOf(def: ResourceDefinition): TableColumn[] {
  const cols = def.tableColumns?.length ? [...def.tableColumns] : [ageColumn];
  return def.tableColumnsIncludeName ? cols : [NAME_COLUMN, ...cols];
}

export function parseIncludeObject(v: string | null): IncludeObject {
  if (v === 'None' || v === 'Object') return v;
  return 'Metadata';
}

function rowObject(obj: KubeObject, include: IncludeObject, metaVersion: string): KubeObject | undefined {
  if (include === 'None') return undefined;
  if (include === 'Object') return obj;
  return partialObject(obj, metaVersion);
}

function safeCell(c: TableColumn, cellSource: KubeObject, now: Date): unknown {
  try {
    const v = c.cell(cellSource, now);
    return v === undefined ? null : v;
  } catch {
    return null;
  }
}

/**
 * `items` pairs the object to print (cells are computed on the stored form) with the object
 * to embed (already converted to the requested version).
 */
export function buildTable(def: ResourceDefinition, items: Array<{ stored: KubeObject; served: KubeObject }>, opts: {
  include: IncludeObject; metaVersion: string; resourceVersion?: string; continue?: string; remainingItemCount?: number; noHeaders?: boolean;
}): KubeObject {
  const cols = columnsOf(def);
  const now = new Date();
  const metadata: Record<string, unknown> = {};
  if (opts.resourceVersion !== undefined) metadata.resourceVersion = opts.resourceVersion;
  if (opts.continue) metadata.continue = opts.continue;
  if (opts.remainingItemCount !== undefined) metadata.remainingItemCount = opts.remainingItemCount;
  const table: KubeObject = {
    kind: 'Table', apiVersion: `meta.k8s.io/${opts.metaVersion}`, metadata,
    columnDefinitions: opts.noHeaders ? [] : cols.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description, priority: c.priority })),
    rows: items.map(({ stored, served }) => {
      const row: Record<string, unknown> = { cells: cols.map((c) => safeCell(c, stored, now)) };
      const o = rowObject(served, opts.include, opts.metaVersion);
      if (o) row.object = o;
      return row;
    }),
  };
  return table;
}
