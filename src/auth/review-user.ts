/**
 * The user a TokenReview's status names (status.user: username, uid, groups, extra), as
 * Kubernetes' webhook token authenticator reads it; undefined without a user name. Extra values
 * are string lists (or, as some servers send them, objects with an `items` list).
 */
import type { UserInfo } from './user.js';

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

export function userFromReview(u: unknown): UserInfo | undefined {
  if (!isDict(u) || typeof u.username !== 'string' || !u.username) return undefined;
  const groups = Array.isArray(u.groups) ? u.groups.filter((g): g is string => typeof g === 'string') : [];
  const out: UserInfo = { name: u.username, groups };
  if (typeof u.uid === 'string' && u.uid) out.uid = u.uid;
  if (isDict(u.extra)) {
    const extra: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(u.extra)) {
      const list = Array.isArray(v) ? v : isDict(v) && Array.isArray(v.items) ? v.items : [];
      extra[k] = list.filter((x): x is string => typeof x === 'string');
    }
    if (Object.keys(extra).length) out.extra = extra;
  }
  return out;
}
