/**
 * SelfSubjectRulesReview: what the requesting user may do in a namespace.
 *
 * The Authorizer contract has no "list your rules" call, so the rules are resolved in steps, for
 * each link of the authorization chain (a UnionAuthorizer) or for the one authorizer given, and
 * the answers are joined (as Kubernetes' union rule resolver: any incomplete answer makes the
 * whole incomplete, errors are aggregated):
 *  1. an authorizer that implements RuleResolver (RBAC) is asked directly;
 *  2. otherwise a wildcard probe (verb, group and resource `*`; path `*`) that is allowed means
 *     everything is allowed (AlwaysAllow, system:masters): the all-wildcard rules;
 *  3. otherwise the configured modes decide: AlwaysDeny (and the system:masters link, for
 *     others) contributes no rules and is complete; any other mode (or unknown modes) makes the
 *     answer incomplete with an evaluationError.
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Authorizer } from '../../../auth/authorizer.js';
import type { UserInfo } from '../../../auth/user.js';
import { checkedBody, recordOf, reply, stringOf, type JsonRecord } from './review-common.js';
import { selfSubjectRulesReviews } from './review-resources.js';

export interface ResourceRule { verbs: string[]; apiGroups: string[]; resources: string[]; resourceNames?: string[] }
export interface NonResourceRule { verbs: string[]; nonResourceURLs: string[] }

export interface SubjectRules {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  incomplete: boolean;
  evaluationError?: string;
}

/** Optional capability of an authorizer: enumerate a user's rules in a namespace. */
export interface RuleResolver {
  rulesFor(user: UserInfo, namespace: string): Promise<SubjectRules>;
}

function isRuleResolver(a: Authorizer): a is Authorizer & RuleResolver {
  return typeof (a as Partial<RuleResolver>).rulesFor === 'function';
}

export const ALL_RESOURCE_RULES: readonly ResourceRule[] = Object.freeze([{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }]);
export const ALL_NON_RESOURCE_RULES: readonly NonResourceRule[] = Object.freeze([{ verbs: ['*'], nonResourceURLs: ['*'] }]);

/** Modes whose rules are known without asking: AlwaysDeny grants nothing, nor does the system:masters link to others. */
const NOTHING_GRANTED_MODES = new Set(['AlwaysDeny', 'PrivilegedGroups']);

/** The links of an authorization chain (UnionAuthorizer), when `a` is one. */
function linksOf(a: Authorizer): readonly Authorizer[] | undefined {
  const chain = (a as { chain?: unknown }).chain;
  return Array.isArray(chain) ? chain as readonly Authorizer[] : undefined;
}

async function allowsEverything(authorizer: Authorizer, user: UserInfo, namespace: string): Promise<boolean> {
  const resource = await authorizer.authorize({
    user, verb: '*', isResourceRequest: true, path: '', namespace, apiGroup: '*', apiVersion: '*', resource: '*', subresource: '', name: '',
  });
  if (resource.decision !== 'allow') return false;
  const nonResource = await authorizer.authorize({
    user, verb: '*', isResourceRequest: false, path: '*', namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '',
  });
  return nonResource.decision === 'allow';
}

/** `modes`: the --authorization-mode list, when known (undefined: only the probe can tell). */
export async function resolveRules(authorizer: Authorizer, user: UserInfo, namespace: string, modes?: readonly string[]): Promise<SubjectRules> {
  const links = linksOf(authorizer);
  if (links) return joinRules(await Promise.all(links.map((l) => resolveRules(l, user, namespace, [l.name]))));
  try {
    if (isRuleResolver(authorizer)) return await authorizer.rulesFor(user, namespace);
    if (await allowsEverything(authorizer, user, namespace)) {
      return { resourceRules: ALL_RESOURCE_RULES.map((r) => ({ ...r })), nonResourceRules: ALL_NON_RESOURCE_RULES.map((r) => ({ ...r })), incomplete: false };
    }
  } catch (e) {
    return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: e instanceof Error ? e.message : String(e) };
  }
  const unknown = modes === undefined ? ['(unknown)'] : modes.filter((m) => !NOTHING_GRANTED_MODES.has(m));
  if (unknown.length === 0) return { resourceRules: [], nonResourceRules: [], incomplete: false };
  const what = modes === undefined ? 'the configured authorizer' : `authorization mode${unknown.length > 1 ? 's' : ''} ${unknown.map((m) => `"${m}"`).join(', ')}`;
  return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: `${what} cannot list rules` };
}

/** The answers of several links as one: rules in order without repeats, incomplete if any is, errors aggregated. */
function joinRules(parts: readonly SubjectRules[]): SubjectRules {
  const seen = new Set<string>();
  const fresh = <T>(r: T): boolean => { const k = JSON.stringify(r); return seen.has(k) ? false : (seen.add(k), true); };
  const errors = parts.map((p) => p.evaluationError).filter((e): e is string => !!e);
  const out: SubjectRules = {
    resourceRules: parts.flatMap((p) => p.resourceRules).filter(fresh),
    nonResourceRules: parts.flatMap((p) => p.nonResourceRules).filter(fresh),
    incomplete: parts.some((p) => p.incomplete),
  };
  if (errors.length) out.evaluationError = errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
  return out;
}

/** POST selfsubjectrulesreviews for the requesting user. */
export async function selfSubjectRulesReview(body: unknown, requester: UserInfo, authorizer: Authorizer, modes?: readonly string[]): Promise<KubeObject> {
  const def = selfSubjectRulesReviews;
  const req = checkedBody(def, body);
  const spec = recordOf(req.spec);
  const namespace = stringOf(spec.namespace);
  if (!namespace) throw errors.badRequest('no namespace on request');
  const rules = await resolveRules(authorizer, requester, namespace, modes);
  const status: JsonRecord = { resourceRules: rules.resourceRules, nonResourceRules: rules.nonResourceRules, incomplete: rules.incomplete };
  if (rules.evaluationError) status.evaluationError = rules.evaluationError;
  return reply(def, req, { spec, status });
}
