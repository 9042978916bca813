/**
 * Audit policy (`--audit-policy-file`, audit.k8s.io/v1 Policy): the first rule matching a
 * request decides its level and stages, as Kubernetes' policy checker. A rule matches when each
 * of its non-empty lists does: users, userGroups, verbs; then resources (group, resources with
 * `*`, `*​/sub`, `res/*` forms, resourceNames) and namespaces for resource requests, or
 * nonResourceURLs (exact, or a prefix ending in `*`) for the others. No matching rule: None.
 */
import { load as loadYaml } from 'js-yaml';
import type { UserInfo } from '../../../auth/user.js';

export type Level = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type Stage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

const LEVELS: readonly Level[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
const STAGES: readonly Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

/** Level order, for "at least Request" checks. */
export function levelAtLeast(l: Level, min: Level): boolean {
  return LEVELS.indexOf(l) >= LEVELS.indexOf(min);
}

interface GroupResources { group: string; resources: string[]; resourceNames: string[] }

interface Rule {
  level: Level;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  namespaces: string[];
  nonResourceURLs: string[];
  omitStages: Stage[];
  omitManagedFields?: boolean;
}

/** What the policy decided for one request. */
export interface AuditDecision {
  level: Level;
  omitStages: ReadonlySet<Stage>;
  omitManagedFields: boolean;
}

/** The request as the policy sees it (the authenticated user, before impersonation). */
export interface PolicyAttributes {
  user: UserInfo;
  verb: string;
  isResourceRequest: boolean;
  path: string;
  apiGroup: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

export class PolicyError extends Error {}

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

function strings(d: Dict, key: string, where: string): string[] {
  const v = d[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new PolicyError(`${where}.${key}: must be a list of strings`);
  return v as string[];
}

function stagesOf(d: Dict, where: string): Stage[] {
  const list = strings(d, 'omitStages', where);
  for (const s of list) if (!STAGES.includes(s as Stage)) throw new PolicyError(`${where}.omitStages: unsupported value "${s}" (want one of ${STAGES.join(', ')})`);
  return list as Stage[];
}

function boolOf(d: Dict, key: string, where: string): boolean | undefined {
  const v = d[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new PolicyError(`${where}.${key}: must be a boolean`);
  return v;
}

function ruleOf(r: unknown, i: number): Rule {
  const where = `rules[${i}]`;
  if (!isDict(r)) throw new PolicyError(`${where}: must be a map`);
  if (typeof r.level !== 'string' || !LEVELS.includes(r.level as Level)) {
    throw new PolicyError(`${where}.level: ${r.level === undefined ? 'required' : `unsupported value "${String(r.level)}"`} (want one of ${LEVELS.join(', ')})`);
  }
  const resources: GroupResources[] = [];
  const rawResources = r.resources ?? [];
  if (!Array.isArray(rawResources)) throw new PolicyError(`${where}.resources: must be a list`);
  rawResources.forEach((g: unknown, j: number) => {
    const w = `${where}.resources[${j}]`;
    if (!isDict(g)) throw new PolicyError(`${w}: must be a map`);
    const group = g.group ?? '';
    if (typeof group !== 'string') throw new PolicyError(`${w}.group: must be a string`);
    const gr = { group, resources: strings(g, 'resources', w), resourceNames: strings(g, 'resourceNames', w) };
    for (const res of gr.resources) {
      if (res === '') throw new PolicyError(`${w}.resources: a resource name is required`);
      if (gr.resourceNames.length && (res === '*' || res.startsWith('*/'))) throw new PolicyError(`${w}.resourceNames: may not be given with a wildcard resource "${res}"`);
    }
    resources.push(gr);
  });
  const rule: Rule = {
    level: r.level as Level,
    users: strings(r, 'users', where),
    userGroups: strings(r, 'userGroups', where),
    verbs: strings(r, 'verbs', where),
    resources,
    namespaces: strings(r, 'namespaces', where),
    nonResourceURLs: strings(r, 'nonResourceURLs', where),
    omitStages: stagesOf(r, where),
  };
  const omf = boolOf(r, 'omitManagedFields', where);
  if (omf !== undefined) rule.omitManagedFields = omf;
  if (rule.nonResourceURLs.length && (rule.resources.length || rule.namespaces.length)) {
    throw new PolicyError(`${where}: rules cannot apply to both regular resources and non-resource URLs`);
  }
  for (const u of rule.nonResourceURLs) {
    if (!u.startsWith('/')) throw new PolicyError(`${where}.nonResourceURLs: "${u}" must start with "/"`);
    if (u.indexOf('*') !== -1 && u.indexOf('*') !== u.length - 1) throw new PolicyError(`${where}.nonResourceURLs: "${u}" may only end with "*"`);
  }
  return rule;
}

export class AuditPolicy {
  private readonly decisions = new Map<Rule | null, AuditDecision>();

  constructor(private readonly rules: Rule[], private readonly omitStages: Stage[], private readonly omitManagedFields: boolean) {
    // One decision object per rule, made once: evaluating a request allocates nothing.
    for (const r of rules) {
      this.decisions.set(r, {
        level: r.level,
        omitStages: new Set([...omitStages, ...r.omitStages]),
        omitManagedFields: r.omitManagedFields ?? omitManagedFields,
      });
    }
    this.decisions.set(null, { level: 'None', omitStages: new Set(omitStages), omitManagedFields });
  }

  /** Parses a Policy document (YAML or JSON); throws PolicyError with the entry at fault. */
  static parse(text: string): AuditPolicy {
    let doc: unknown;
    try {
      doc = loadYaml(text);
    } catch (e) {
      throw new PolicyError(`not YAML or JSON: ${(e as Error).message.split('\n')[0]}`);
    }
    if (!isDict(doc)) throw new PolicyError('not a Policy object');
    if (doc.kind !== 'Policy') throw new PolicyError(`kind is "${String(doc.kind ?? '')}", want "Policy"`);
    if (doc.apiVersion !== 'audit.k8s.io/v1') throw new PolicyError(`apiVersion is "${String(doc.apiVersion ?? '')}", want "audit.k8s.io/v1"`);
    const rules = doc.rules ?? [];
    if (!Array.isArray(rules)) throw new PolicyError('rules: must be a list');
    const omitStages = stagesOf(doc, 'Policy');
    const omf = boolOf(doc, 'omitManagedFields', 'Policy') ?? false;
    return new AuditPolicy(rules.map(ruleOf), omitStages, omf);
  }

  evaluate(a: PolicyAttributes): AuditDecision {
    for (const r of this.rules) if (matches(r, a)) return this.decisions.get(r)!;
    return this.decisions.get(null)!;
  }
}

function matches(r: Rule, a: PolicyAttributes): boolean {
  if (r.users.length && !r.users.includes(a.user.name)) return false;
  if (r.userGroups.length && !a.user.groups.some((g) => r.userGroups.includes(g))) return false;
  if (r.verbs.length && !r.verbs.includes(a.verb)) return false;
  if (r.namespaces.length || r.resources.length) return matchesResource(r, a);
  if (r.nonResourceURLs.length) return matchesNonResource(r, a);
  return true;
}

function matchesResource(r: Rule, a: PolicyAttributes): boolean {
  if (!a.isResourceRequest) return false;
  if (r.namespaces.length && !r.namespaces.includes(a.namespace)) return false;
  if (!r.resources.length) return true;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  for (const gr of r.resources) {
    if (gr.group !== a.apiGroup) continue;
    if (!gr.resources.length) return true;
    if (gr.resourceNames.length && !gr.resourceNames.includes(a.name)) continue;
    for (const res of gr.resources) {
      if (res === combined || res === '*') return true;
      if (a.subresource && res.startsWith('*/') && res.slice(2) === a.subresource) return true;
      if (res.endsWith('/*') && res.slice(0, -2) === a.resource) return true;
    }
  }
  return false;
}

function matchesNonResource(r: Rule, a: PolicyAttributes): boolean {
  if (a.isResourceRequest) return false;
  for (const u of r.nonResourceURLs) {
    if (u === '*' || u === a.path) return true;
    if (u.endsWith('*') && a.path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}
