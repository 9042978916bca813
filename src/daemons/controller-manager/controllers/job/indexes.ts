/**
 * Completion indexes of Indexed Jobs: the interval sets behind status.completedIndexes, which
 * indexes still need a pod, which duplicate pods to remove, and how a pod is marked with its
 * index.
 *
 * Interval strings list ascending, non-overlapping ranges: "a" for one index, "a,b" for two
 * adjacent ones, "a-b" for three or more (so {0,1,2,4,6,7} is "0-2,4,6,7"). Parsing ignores
 * malformed parts and anything at or beyond `completions`.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { compareForDeletion } from '../controller-utils.js';
import { COMPLETION_INDEX_KEY, completionIndexOf, type Dict } from './job-spec.js';

export interface Interval { first: number; last: number }

export function parseIndexes(s: string | undefined, completions: number): Interval[] {
  const out: Interval[] = [];
  if (!s) return out;
  for (const part of s.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) continue;
    const first = Number(m[1]);
    if (first >= completions) break;
    const last = Math.min(m[2] === undefined ? first : Number(m[2]), completions - 1);
    if (last < first) continue;
    addInterval(out, { first, last });
  }
  return out;
}

/** Appends to an ascending list, merging with the last interval when they touch or overlap. */
function addInterval(list: Interval[], iv: Interval): void {
  const tail = list[list.length - 1];
  if (tail && iv.first <= tail.last + 1) tail.last = Math.max(tail.last, iv.last);
  else list.push({ ...iv });
}

/** The union of `list` and `indexes` (any order, duplicates allowed). */
export function withIndexes(list: readonly Interval[], indexes: readonly number[]): Interval[] {
  const all = [...list.map((iv) => ({ ...iv })), ...indexes.map((i) => ({ first: i, last: i }))]
    .sort((a, b) => a.first - b.first);
  const out: Interval[] = [];
  for (const iv of all) addInterval(out, iv);
  return out;
}

export function countIndexes(list: readonly Interval[]): number {
  return list.reduce((n, iv) => n + iv.last - iv.first + 1, 0);
}

export function hasIndex(list: readonly Interval[], ix: number): boolean {
  return list.some((iv) => iv.first <= ix && ix <= iv.last);
}

export function formatIndexes(list: readonly Interval[]): string {
  return list.map((iv) => {
    if (iv.first === iv.last) return String(iv.first);
    return `${iv.first}${iv.last === iv.first + 1 ? ',' : '-'}${iv.last}`;
  }).join(',');
}

/** The lowest `count` indexes below `completions` neither succeeded nor held by an active pod. */
export function pendingIndexes(active: readonly KubeObject[], succeeded: readonly Interval[], count: number, completions: number): number[] {
  const held = new Set<number>();
  for (const p of active) { const ix = completionIndexOf(p); if (ix !== undefined) held.add(ix); }
  const out: number[] = [];
  for (let i = 0; i < completions && out.length < count; i++) {
    const iv = succeeded.find((x) => x.first <= i && i <= x.last);
    if (iv) { i = iv.last; continue; }
    if (!held.has(i)) out.push(i);
  }
  return out;
}

/**
 * Active pods an Indexed Job must remove regardless of parallelism: pods without a valid index,
 * pods whose index is at or beyond completions, and all but one pod of a repeated index (the
 * one kept is the last in deletion order, i.e. the most advanced).
 */
export function surplusIndexedPods(active: readonly KubeObject[], completions: number): { remove: KubeObject[]; keep: KubeObject[] } {
  const remove: KubeObject[] = [];
  const byIndex = new Map<number, KubeObject[]>();
  for (const p of active) {
    const ix = completionIndexOf(p);
    if (ix === undefined || ix >= completions) { remove.push(p); continue; }
    const list = byIndex.get(ix) ?? [];
    list.push(p);
    byIndex.set(ix, list);
  }
  const keep: KubeObject[] = [];
  for (const ix of [...byIndex.keys()].sort((a, b) => a - b)) {
    const pods = [...(byIndex.get(ix) ?? [])].sort((a, b) => compareForDeletion(a, b));
    remove.push(...pods.slice(0, -1));
    keep.push(pods[pods.length - 1]);
  }
  return { remove, keep };
}

/** Env var every container of an Indexed Job's pods gets (unless it sets one itself). */
export const COMPLETION_INDEX_ENV = 'JOB_COMPLETION_INDEX';

function addIndexEnv(containers: unknown): void {
  if (!Array.isArray(containers)) return;
  for (const c of containers as Dict[]) {
    const env = Array.isArray(c.env) ? (c.env as Dict[]) : [];
    if (env.some((e) => e.name === COMPLETION_INDEX_ENV)) continue;
    c.env = [...env, { name: COMPLETION_INDEX_ENV, valueFrom: { fieldRef: { fieldPath: `metadata.labels['${COMPLETION_INDEX_KEY}']` } } }];
  }
}

/** Longest generateName the API server keeps whole (63 minus the random suffix). */
const MAX_GENERATE_NAME = 58;

/** `<job>-<index>-`, the job name shortened when the whole would be too long. */
export function indexedGenerateName(jobName: string, index: number): string {
  const suffix = `-${index}-`;
  const prefix = jobName + suffix;
  return prefix.length <= MAX_GENERATE_NAME ? prefix : jobName.slice(0, MAX_GENERATE_NAME - suffix.length) + suffix;
}

/**
 * Marks a pod (built from the template, owned by us) with its index: annotation and label,
 * hostname `<job>-<index>`, generateName `<job>-<index>-` and the JOB_COMPLETION_INDEX env var.
 */
export function stampIndex(pod: KubeObject, jobName: string, index: number): void {
  const meta = pod.metadata ?? (pod.metadata = {});
  meta.annotations = { ...(meta.annotations ?? {}), [COMPLETION_INDEX_KEY]: String(index) };
  meta.labels = { ...(meta.labels ?? {}), [COMPLETION_INDEX_KEY]: String(index) };
  meta.generateName = indexedGenerateName(jobName, index);
  const spec = (pod.spec ?? (pod.spec = {})) as Dict;
  spec.hostname = `${jobName}-${index}`;
  addIndexEnv(spec.initContainers);
  addIndexEnv(spec.containers);
}
