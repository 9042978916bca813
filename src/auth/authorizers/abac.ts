/**
 * --authorization-mode=ABAC: the policy file of --authorization-policy-file, one JSON policy
 * per line, as Kubernetes' ABAC authorizer reads and matches it.
 *
 * File: blank lines and lines starting with `#` (after spaces) are skipped. A line is either an
 * `abac.authorization.kubernetes.io/v1beta1` Policy `{apiVersion, kind: "Policy", spec: {...}}`,
 * or the legacy v0 form (unversioned, or apiVersion .../v0: the fields at the top level, no
 * apiGroup or nonResourcePath), converted as Kubernetes converts it: no user and no group, or
 * `*` for either, means every authenticated user; an empty namespace or resource means all;
 * every API group; and with neither namespace nor resource, every non-resource path too.
 * In v1beta1 a `*` user or group also becomes the group system:authenticated.
 *
 * Matching (a policy allows when all hold): the subject (user equal, or `*`; a group the user
 * is in, or `*`; a policy with neither matches nobody); readonly policies match only get, list
 * and watch; a resource request needs namespace, resource and apiGroup each equal or `*` (an
 * empty namespace matches only cluster-scoped requests); a non-resource request needs the path
 * equal, `*`, or a prefix ending in `*`. ABAC allows or has no opinion ("No policy matched.").
 */
import { readFile } from 'node:fs/promises';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../authorizer.js';
import { AUTHENTICATED_GROUP, type UserInfo } from '../user.js';

export const ABAC_GROUP = 'abac.authorization.kubernetes.io';

export interface AbacPolicy {
  readonly user: string;
  readonly group: string;
  readonly readonly: boolean;
  readonly apiGroup: string;
  readonly resource: string;
  readonly namespace: string;
  readonly nonResourcePath: string;
}

/** A bad policy file: the message names the file and, for a bad line, its number. */
export class PolicyFileError extends Error {
  override readonly name = 'PolicyFileError';
}

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const SPEC_STRINGS = ['user', 'group', 'apiGroup', 'resource', 'namespace', 'nonResourcePath'] as const;
const LEGACY_STRINGS = ['user', 'group', 'resource', 'namespace'] as const;

/** Go's JSON decoding: an absent or null field is its zero value, another type is an error. */
function field(o: Json, key: string, kind: 'string' | 'boolean', where: string): string | boolean {
  const v = o[key];
  if (v === undefined || v === null) return kind === 'string' ? '' : false;
  if (typeof v !== kind) throw new Error(`json: cannot unmarshal ${typeof v === 'object' ? (Array.isArray(v) ? 'array' : 'object') : typeof v} into Go struct field ${where}.${key} of type ${kind === 'string' ? 'string' : 'bool'}`);
  return v as string | boolean;
}

function versioned(doc: Json): AbacPolicy {
  const spec = doc.spec ?? {};
  if (!isRecord(spec)) throw new Error('json: cannot unmarshal spec into Go struct field Policy.spec of type PolicySpec');
  const s: Record<string, string> = {};
  for (const k of SPEC_STRINGS) s[k] = field(spec, k, 'string', 'PolicySpec') as string;
  let p: AbacPolicy = { user: s.user!, group: s.group!, readonly: field(spec, 'readonly', 'boolean', 'PolicySpec') as boolean,
    apiGroup: s.apiGroup!, resource: s.resource!, namespace: s.namespace!, nonResourcePath: s.nonResourcePath! };
  // `*` for user or group is "every authenticated user".
  if (p.user === '*' || p.group === '*') p = { ...p, user: '', group: AUTHENTICATED_GROUP };
  return p;
}

function legacy(doc: Json): AbacPolicy {
  const s: Record<string, string> = {};
  for (const k of LEGACY_STRINGS) s[k] = field(doc, k, 'string', 'Policy') as string;
  let user = s.user!, group = s.group!;
  if (!user && !group) group = AUTHENTICATED_GROUP;
  if (user === '*' || group === '*') { user = ''; group = AUTHENTICATED_GROUP; }
  return {
    user, group, readonly: field(doc, 'readonly', 'boolean', 'Policy') as boolean, apiGroup: '*',
    namespace: s.namespace || '*', resource: s.resource || '*',
    nonResourcePath: !s.namespace && !s.resource ? '*' : '',
  };
}

/** One policy line (not blank, not a comment). */
export function parsePolicyLine(text: string): { policy: AbacPolicy; unversioned: boolean } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`invalid JSON: ${(e as Error).message}`);
  }
  if (!isRecord(doc)) throw new Error('a policy must be a JSON object');
  const apiVersion = doc.apiVersion, kind = doc.kind;
  // Without apiVersion or kind a line is the legacy form (Kubernetes falls back to v0 then).
  if (apiVersion === undefined || apiVersion === '' || kind === undefined || kind === '') return { policy: legacy(doc), unversioned: true };
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') throw new Error('apiVersion and kind must be strings');
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  if (group !== ABAC_GROUP || (version !== 'v1beta1' && version !== 'v0') || kind !== 'Policy') {
    throw new Error(`no kind "${kind}" is registered for version "${apiVersion}"`);
  }
  // v0's versioned form is the legacy one (fields at the top level), converted the same way.
  return { policy: version === 'v0' ? legacy(doc) : versioned(doc), unversioned: false };
}

export interface ParsedPolicyFile {
  policies: AbacPolicy[];
  /** Lines in the unversioned legacy form (Kubernetes warns once about them). */
  unversionedLines: number;
}

/** Parses the file's text; `path` only names it in errors. */
export function parsePolicyFile(text: string, path: string): ParsedPolicyFile {
  const policies: AbacPolicy[] = [];
  let unversionedLines = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, '');
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    try {
      const { policy, unversioned } = parsePolicyLine(line);
      policies.push(policy);
      if (unversioned) unversionedLines++;
    } catch (e) {
      throw new PolicyFileError(`error reading policy file ${path}, line ${i + 1}: ${oneLine(trimmed)}: ${(e as Error).message}`);
    }
  }
  return { policies, unversionedLines };
}

/** A policy line quoted in a one-line error, cut if long. */
function oneLine(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
}

export async function loadPolicyFile(path: string): Promise<ParsedPolicyFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new PolicyFileError(`error reading policy file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parsePolicyFile(text, path);
}

export function subjectMatches(p: AbacPolicy, user: UserInfo): boolean {
  let matched = false;
  if (p.user) {
    if (p.user === '*') matched = true;
    else if (p.user === user.name) matched = true;
    else return false;
  }
  if (p.group) {
    if (p.group === '*') matched = true;
    else if (user.groups.includes(p.group)) matched = true;
    else return false;
  }
  return matched;
}

const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);

function verbMatches(p: AbacPolicy, a: AuthorizationAttributes): boolean {
  return !p.readonly || READ_ONLY_VERBS.has(a.verb);
}

function resourceMatches(p: AbacPolicy, a: AuthorizationAttributes): boolean {
  if (!a.isResourceRequest) return false;
  return (p.namespace === '*' || p.namespace === a.namespace)
    && (p.resource === '*' || p.resource === a.resource)
    && (p.apiGroup === '*' || p.apiGroup === a.apiGroup);
}

function nonResourceMatches(p: AbacPolicy, a: AuthorizationAttributes): boolean {
  if (a.isResourceRequest) return false;
  const want = p.nonResourcePath;
  if (want === '*' || want === a.path) return true;
  return want.endsWith('*') && a.path.startsWith(want.replace(/\*+$/, ''));
}

export function policyMatches(p: AbacPolicy, a: AuthorizationAttributes): boolean {
  return subjectMatches(p, a.user) && verbMatches(p, a) && (resourceMatches(p, a) || nonResourceMatches(p, a));
}

const ALLOW: AuthorizationResult = Object.freeze({ decision: 'allow', reason: '' });
const NO_MATCH: AuthorizationResult = Object.freeze({ decision: 'noOpinion', reason: 'No policy matched.' });

/** The rule shapes of SelfSubjectRulesReview (structurally the reviews' RuleResolver answer). */
export interface AbacRules {
  resourceRules: Array<{ verbs: string[]; apiGroups: string[]; resources: string[] }>;
  nonResourceRules: Array<{ verbs: string[]; nonResourceURLs: string[] }>;
  incomplete: boolean;
}

export class AbacAuthorizer implements Authorizer {
  readonly name = 'ABAC';
  constructor(private readonly policies: readonly AbacPolicy[]) {}

  authorize(a: AuthorizationAttributes): AuthorizationResult {
    for (const p of this.policies) if (policyMatches(p, a)) return ALLOW;
    return NO_MATCH;
  }

  /** The user's rules in a namespace, as Kubernetes' ABAC RulesFor lists them (always complete). */
  async rulesFor(user: UserInfo, namespace: string): Promise<AbacRules> {
    const out: AbacRules = { resourceRules: [], nonResourceRules: [], incomplete: false };
    for (const p of this.policies) {
      if (!subjectMatches(p, user) || (p.namespace !== '*' && p.namespace !== namespace)) continue;
      const verbs = p.readonly ? ['get', 'list', 'watch'] : ['*'];
      if (p.resource) out.resourceRules.push({ verbs: [...verbs], apiGroups: [p.apiGroup], resources: [p.resource] });
      if (p.nonResourcePath) out.nonResourceRules.push({ verbs: [...verbs], nonResourceURLs: [p.nonResourcePath] });
    }
    return out;
  }
}
