/**
 * Impersonation: a request with `Impersonate-User` (and optionally `Impersonate-Group`,
 * `Impersonate-Uid`, `Impersonate-Extra-<key>`) runs as that user once the authenticated user
 * may `impersonate` each value, as Kubernetes' impersonation filter:
 *
 *  - a user `system:serviceaccount:<ns>:<name>` is checked as `serviceaccounts` <name> in <ns>,
 *    any other user as `users` <name>, each group as `groups` <name> (core group); a uid as
 *    `uids` <uid>, each extra value as `userextras/<key>` <value> (authentication.k8s.io). The
 *    first refusal answers 403 in Kubernetes' words (`users "bob" is forbidden: User "alice"
 *    cannot impersonate resource "users" in API group "" at the cluster scope`).
 *  - groups, uid or extras without a user are a 500, as Kubernetes answers them.
 *  - the new user: the given groups, or for a service account without given groups its groups;
 *    system:authenticated added unless system:authenticated or system:unauthenticated is given
 *    (system:unauthenticated for system:anonymous); the uid and extras given.
 *  - extra keys are the header name's rest, lower-cased and percent-decoded (left as sent when
 *    not valid percent-encoding).
 *
 * The authenticated user stays on the context as `originalUser` (audit shows both), and the
 * headers are removed so nothing downstream (proxies) forwards them. It runs after audit and
 * before authorization, as in Kubernetes' chain, so a refused impersonation is audited.
 */
import type * as http from 'node:http';
import { errors } from '../../../api/meta/status.js';
import { dns1123Label, dns1123Subdomain } from '../../../api/resources/common/validation.js';
import type { AuthorizationAttributes, Authorizer } from '../../../auth/authorizer.js';
import { SA_ALL_GROUP, SA_GROUP_PREFIX, SA_USER_PREFIX } from '../../../auth/service-account-token.js';
import { ANONYMOUS_USER_NAME, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type UserInfo } from '../../../auth/user.js';
import type { ApiRequest } from '../context.js';
import { forbiddenError } from './authorization.js';
import type { Exchange, Filter } from './filter.js';

const USER = 'impersonate-user';
const GROUP = 'impersonate-group';
const UID = 'impersonate-uid';
const EXTRA_PREFIX = 'impersonate-extra-';
const AUTHN_GROUP = 'authentication.k8s.io';

/** One thing to impersonate, checked as `impersonate` on a resource. */
interface Wanted { resource: string; apiGroup: string; namespace: string; name: string; subresource: string }

export interface ImpersonationRequest {
  wanted: Wanted[];
  user?: string;
  /** Set when the user is a service account. */
  serviceAccount?: { namespace: string; name: string };
  groups?: string[];
  uid?: string;
  extra: Record<string, string[]>;
}

function hasImpersonationHeader(headers: http.IncomingHttpHeaders): boolean {
  for (const k in headers) if (k.startsWith('impersonate-')) return true;
  return false;
}

/**
 * Every value of a header, repeated headers apart (HTTP/1.1 and HTTP/2 both keep raw headers;
 * the joined `headers` value is only the fallback for a request without them).
 */
function values(req: ApiRequest, name: string): string[] {
  const raw = req.rawHeaders;
  if (raw && raw.length) {
    const out: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) out.push(raw[i + 1]!);
    return out;
  }
  const v = req.headers[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function decodeExtraKey(key: string): string {
  try { return decodeURIComponent(key); } catch { return key; }
}

/** `system:serviceaccount:<ns>:<name>` with a valid namespace and name, else undefined. */
export function splitServiceAccount(user: string): { namespace: string; name: string } | undefined {
  if (!user.startsWith(SA_USER_PREFIX)) return undefined;
  const parts = user.slice(SA_USER_PREFIX.length).split(':');
  if (parts.length !== 2) return undefined;
  const [namespace, name] = parts as [string, string];
  if (dns1123Label(namespace).length || dns1123Subdomain(name).length) return undefined;
  return { namespace, name };
}

/** What the request asks to impersonate; undefined when it asks nothing. Throws 500 for groups/uid/extras alone. */
export function impersonationRequest(req: ApiRequest): ImpersonationRequest | undefined {
  if (!hasImpersonationHeader(req.headers)) return undefined;
  const r: ImpersonationRequest = { wanted: [], extra: {} };
  const described: string[] = [];
  const user = values(req, USER)[0] ?? '';
  if (user) {
    r.user = user;
    const sa = splitServiceAccount(user);
    if (sa) {
      r.serviceAccount = sa;
      r.wanted.push({ resource: 'serviceaccounts', apiGroup: '', namespace: sa.namespace, name: sa.name, subresource: '' });
    } else {
      r.wanted.push({ resource: 'users', apiGroup: '', namespace: '', name: user, subresource: '' });
    }
  }
  const groups = values(req, GROUP);
  if (groups.length) {
    r.groups = groups;
    for (const g of groups) {
      r.wanted.push({ resource: 'groups', apiGroup: '', namespace: '', name: g, subresource: '' });
      described.push(`group ${g}`);
    }
  }
  for (const header of Object.keys(req.headers)) {
    if (!header.startsWith(EXTRA_PREFIX)) continue;
    const key = decodeExtraKey(header.slice(EXTRA_PREFIX.length).toLowerCase());
    for (const v of values(req, header)) {
      (r.extra[key] ??= []).push(v);
      r.wanted.push({ resource: 'userextras', apiGroup: AUTHN_GROUP, namespace: '', name: v, subresource: key });
      described.push(`extra ${key}=${v}`);
    }
  }
  const uid = values(req, UID)[0] ?? '';
  if (uid) {
    r.uid = uid;
    r.wanted.push({ resource: 'uids', apiGroup: AUTHN_GROUP, namespace: '', name: uid, subresource: '' });
    described.push(`uid ${uid}`);
  }
  if (!r.user) {
    if (described.length) throw errors.internal(`requested [${described.join(' ')}] without impersonating a user`);
    return undefined;
  }
  return r;
}

/** The user a permitted request runs as. */
export function impersonatedUser(r: ImpersonationRequest): UserInfo {
  const name = r.user!;
  let groups: string[] = r.groups ? [...r.groups] : [];
  if (!r.groups && r.serviceAccount) groups = [SA_ALL_GROUP, `${SA_GROUP_PREFIX}${r.serviceAccount.namespace}`];
  if (name !== ANONYMOUS_USER_NAME) {
    if (!groups.includes(AUTHENTICATED_GROUP) && !groups.includes(UNAUTHENTICATED_GROUP)) groups.push(AUTHENTICATED_GROUP);
  } else if (!groups.includes(UNAUTHENTICATED_GROUP)) {
    groups.push(UNAUTHENTICATED_GROUP);
  }
  const u: UserInfo = { name, groups };
  if (r.uid) u.uid = r.uid;
  if (Object.keys(r.extra).length) u.extra = r.extra;
  return u;
}

function clearHeaders(req: ApiRequest): void {
  for (const k of Object.keys(req.headers)) if (k.startsWith('impersonate-')) delete req.headers[k];
}

export function impersonation(authorizer: Authorizer): Filter {
  return {
    name: 'impersonation',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      // Most requests impersonate no one: they pass without a promise of their own.
      if (!hasImpersonationHeader(x.req.headers)) return next();
      return impersonate(authorizer, x, next);
    },
  };
}

async function impersonate(authorizer: Authorizer, x: Exchange, next: () => Promise<void>): Promise<void> {
  const r = impersonationRequest(x.req);
  if (!r) return next();
  const requester = x.ctx.user;
  for (const w of r.wanted) {
    const attrs: AuthorizationAttributes = {
      user: requester, verb: 'impersonate', isResourceRequest: true, path: '', namespace: w.namespace,
      apiGroup: w.apiGroup, apiVersion: '', resource: w.resource, subresource: w.subresource, name: w.name,
    };
    const d = await authorizer.authorize(attrs);
    if (d.decision !== 'allow') {
      x.ctx.log.debug({ reason: d.reason, resource: w.resource }, 'impersonation forbidden');
      throw forbiddenError(attrs, d.reason);
    }
  }
  const user = impersonatedUser(r);
  x.ctx.originalUser = requester;
  x.ctx.user = user;
  x.ctx.log.debug({ user: requester.name, as: user.name }, 'acting as another user');
  clearHeaders(x.req);
  return next();
}
