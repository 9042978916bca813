/** Helpers for table columns (the way kubectl's printers render values). */
import type { KubeObject, TableColumn } from '../types.js';
import { isObject } from './validation.js';

/** kubectl's HumanDuration ("5s", "3m20s", "4h5m", "12d"). */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) { const s = seconds % 60; return s === 0 ? `${minutes}m` : `${minutes}m${s}s`; }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) { const m = minutes % 60; return m === 0 ? `${hours}h` : `${hours}h${m}m`; }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) { const h = hours % 24; return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`; }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) { const d = Math.floor(hours / 24) % 365; return d === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${d}d`; }
  return `${Math.floor(hours / 24 / 365)}y`;
}

export function since(ts: unknown, now: Date): string {
  if (typeof ts !== 'string' || !ts) return '<unknown>';
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now.getTime() - t);
}

export const ageColumn: TableColumn = {
  name: 'Age', type: 'string', format: '', priority: 0,
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
  cell: (o, now) => since(o.metadata?.creationTimestamp, now),
};

export function col(name: string, type: TableColumn['type'], description: string, cell: TableColumn['cell'], priority = 0, format = ''): TableColumn {
  return { name, type, format, description, priority, cell };
}

/** Reads a dotted path ('spec.replicas'); undefined when any step is missing. */
export function path(obj: unknown, p: string): unknown {
  let cur: unknown = obj;
  for (const part of p.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

export function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}
export function str(v: unknown, dflt = ''): string {
  return typeof v === 'string' ? v : dflt;
}
export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
export function rec(v: unknown): Record<string, unknown> {
  return isObject(v) ? v : {};
}

/** CONTAINERS / IMAGES columns for workloads with a pod template at spec.template. */
export function templateContainers(o: KubeObject, at = 'spec.template.spec.containers'): string {
  return arr(path(o, at)).map((c) => str(rec(c).name)).join(',');
}
export function templateImages(o: KubeObject, at = 'spec.template.spec.containers'): string {
  return arr(path(o, at)).map((c) => str(rec(c).image)).join(',');
}
export const containersColumn = (at?: string): TableColumn => col('Containers', 'string', 'Names of each container in the template.', (o) => templateContainers(o, at), 1);
export const imagesColumn = (at?: string): TableColumn => col('Images', 'string', 'Images referenced by each container in the template.', (o) => templateImages(o, at), 1);

export const createdAtColumn: TableColumn = col('Created At', 'date', 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  (o) => o.metadata?.creationTimestamp ?? null);
