/**
 * Pod Security levels and versions: namespace labels → the policy to evaluate (Kubernetes'
 * PolicyToEvaluate: unparsable enforce labels fail closed to restricted:latest, audit and warn
 * fail open), and evaluating a pod spec at a level and version into Kubernetes' aggregated
 * `reason (detail), reason (detail)` text.
 */
import type { ObjectMeta } from '../../../../api/resources/types.js';
import type { PodSpecShape } from '../pod-shape.js';
import { CHECKS, type Check, type Level } from './checks.js';

export type { Level };
export const LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];
export const LABEL_PREFIX = 'pod-security.kubernetes.io/';
export type Mode = 'enforce' | 'audit' | 'warn';
export const MODES: readonly Mode[] = ['enforce', 'audit', 'warn'];

/** A policy version: a v1.x minor, or Infinity for "latest". */
export interface LevelVersion { readonly level: Level; readonly version: number }
export type Policy = Readonly<Record<Mode, LevelVersion>>;

export const levelVersionString = (lv: LevelVersion): string => `${lv.level}:${lv.version === Infinity ? 'latest' : `v1.${lv.version}`}`;

export function parseLevel(s: string): Level | undefined {
  return (LEVELS as readonly string[]).includes(s) ? s as Level : undefined;
}

export function parseVersion(s: string): number | undefined {
  if (s === 'latest') return Infinity;
  const m = /^v1\.([0-9]|[1-9][0-9]*)$/.exec(s);
  return m ? Number(m[1]) : undefined;
}

export interface LabelError { readonly label: string; readonly value: string; readonly message: string }

/** The namespace's policy from its labels over the defaults, and the labels that did not parse. */
export function policyToEvaluate(labels: Readonly<Record<string, string>> | undefined, defaults: Policy): { policy: Policy; errors: LabelError[] } {
  const errors: LabelError[] = [];
  const p: Record<Mode, LevelVersion> = { enforce: defaults.enforce, audit: defaults.audit, warn: defaults.warn };
  if (!labels) return { policy: p, errors };
  for (const mode of MODES) {
    const levelLabel = LABEL_PREFIX + mode;
    const versionLabel = `${levelLabel}-version`;
    const level = labels[levelLabel];
    if (level !== undefined) {
      const parsed = parseLevel(level);
      if (!parsed) errors.push({ label: levelLabel, value: level, message: `must be one of ${LEVELS.join(', ')}` });
      // Enforce fails closed, audit and warn fail open.
      p[mode] = { ...p[mode], level: parsed ?? (mode === 'enforce' ? 'restricted' : 'privileged') };
    }
    const version = labels[versionLabel];
    if (version !== undefined) {
      const parsed = parseVersion(version);
      if (parsed === undefined) errors.push({ label: versionLabel, value: version, message: 'must be "latest" or "v1.x"' });
      p[mode] = { ...p[mode], version: parsed ?? Infinity };
    }
  }
  return { policy: p, errors };
}

const applies = (c: Check, version: number): boolean => c.since <= version && (c.until === undefined || version < c.until);
const byId = (a: Check, b: Check): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The checks of a level at a version, in Kubernetes' order: baseline ids sorted, then restricted ids sorted. */
function checksFor(lv: LevelVersion): Check[] {
  if (lv.level === 'privileged') return [];
  const restricted = lv.level === 'restricted' ? CHECKS.filter((c) => c.level === 'restricted' && applies(c, lv.version)) : [];
  const overridden = new Set(restricted.flatMap((c) => c.overrides ?? []));
  const baseline = CHECKS.filter((c) => c.level === 'baseline' && applies(c, lv.version) && !overridden.has(c.id));
  return [...baseline.sort(byId), ...restricted.sort(byId)];
}

const cache = new Map<string, Check[]>();

/** What the pod (or template) violates at the level and version: `reason (detail), ...`; undefined when allowed. */
export function evaluate(lv: LevelVersion, meta: ObjectMeta, spec: PodSpecShape): string | undefined {
  const key = levelVersionString(lv);
  let checks = cache.get(key);
  if (!checks) cache.set(key, checks = checksFor(lv));
  const parts: string[] = [];
  for (const c of checks) {
    const r = c.run(meta, spec);
    if (r) parts.push(r.detail ? `${r.reason} (${r.detail})` : r.reason);
  }
  return parts.length ? parts.join(', ') : undefined;
}
