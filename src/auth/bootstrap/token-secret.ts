/**
 * Bootstrap tokens as Kubernetes defines them (k8s.io/cluster-bootstrap): a token `<id>.<secret>`
 * (6 and 16 characters of [a-z0-9]) lives in Secret kube-system/bootstrap-token-<id> of type
 * bootstrap.kubernetes.io/token. These helpers read such a Secret as stored (data base64) and
 * apply Kubernetes' rules: an unparseable expiration counts as expired, a usage is on only when
 * its value is exactly "true", every extra group must start with `system:bootstrappers:`.
 */
import { randomInt } from 'node:crypto';
import type { KubeObject } from '../../api/resources/types.js';

export const BOOTSTRAP_TOKEN_NAMESPACE = 'kube-system';
export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';
export const BOOTSTRAP_TOKEN_SECRET_PREFIX = 'bootstrap-token-';
export const BOOTSTRAP_USER_PREFIX = 'system:bootstrap:';
export const BOOTSTRAP_DEFAULT_GROUP = 'system:bootstrappers';
export const KEY_TOKEN_ID = 'token-id';
export const KEY_TOKEN_SECRET = 'token-secret';
export const KEY_EXPIRATION = 'expiration';
export const KEY_DESCRIPTION = 'description';
export const KEY_EXTRA_GROUPS = 'auth-extra-groups';
export const KEY_USAGE_AUTHENTICATION = 'usage-bootstrap-authentication';
export const KEY_USAGE_SIGNING = 'usage-bootstrap-signing';
/** The cluster-info ConfigMap in kube-public, its kubeconfig key and the signature key prefix. */
export const CLUSTER_INFO_NAMESPACE = 'kube-public';
export const CLUSTER_INFO_NAME = 'cluster-info';
export const CLUSTER_INFO_KUBECONFIG_KEY = 'kubeconfig';
export const JWS_KEY_PREFIX = 'jws-kubeconfig-';

const TOKEN_RE = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const SECRET_NAME_RE = /^bootstrap-token-([a-z0-9]{6})$/;
const GROUP_RE = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
/** RFC 3339 as Go's time.RFC3339 accepts it: seconds required, fraction optional, Z or ±hh:mm. */
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export interface BootstrapToken { readonly id: string; readonly secret: string }

/** `<id>.<secret>` split, or undefined when the text is not of that form. */
export function parseBootstrapToken(token: string): BootstrapToken | undefined {
  const m = TOKEN_RE.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

/** The token id a Secret name carries (`bootstrap-token-<id>`), or undefined. */
export function tokenIdOfSecretName(name: string): string | undefined {
  return SECRET_NAME_RE.exec(name)?.[1];
}

export function secretNameOf(id: string): string {
  return BOOTSTRAP_TOKEN_SECRET_PREFIX + id;
}

/** One data value of a stored Secret, decoded; '' when absent (as Kubernetes' GetData). */
export function secretData(secret: KubeObject, key: string): string {
  const data = (secret as { data?: Record<string, unknown> }).data;
  const v = data?.[key];
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : '';
}

export function isBootstrapTokenSecret(secret: KubeObject): boolean {
  return (secret as { type?: unknown }).type === BOOTSTRAP_TOKEN_SECRET_TYPE;
}

/**
 * Milliseconds until the token expires: undefined when it never does, 0 when it has (an
 * expiration that does not parse counts as expired, as in Kubernetes).
 */
export function msUntilExpiry(secret: KubeObject, now: number = Date.now()): number | undefined {
  const exp = secretData(secret, KEY_EXPIRATION);
  if (!exp) return undefined;
  const t = RFC3339_RE.test(exp) ? Date.parse(exp) : NaN;
  if (Number.isNaN(t)) return 0;
  return Math.max(0, t - now);
}

export function isExpired(secret: KubeObject, now: number = Date.now()): boolean {
  return msUntilExpiry(secret, now) === 0;
}

export function isValidBootstrapGroup(group: string): boolean {
  return GROUP_RE.test(group);
}

/**
 * system:bootstrappers plus auth-extra-groups, sorted and without repeats; undefined when an
 * extra group is not a valid bootstrap group (the token then authenticates no one).
 */
export function bootstrapGroups(secret: KubeObject): string[] | undefined {
  const groups = new Set([BOOTSTRAP_DEFAULT_GROUP]);
  const extra = secretData(secret, KEY_EXTRA_GROUPS);
  if (extra) {
    for (const g of extra.split(',')) {
      if (!isValidBootstrapGroup(g)) return undefined;
      groups.add(g);
    }
  }
  return [...groups].sort();
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function randomString(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

/** A fresh random token (crypto-random id and secret). */
export function generateBootstrapToken(): BootstrapToken {
  return { id: randomString(6), secret: randomString(16) };
}

/** The extra group of tokens `corectl token create` makes (kubeadm's is system:bootstrappers:kubeadm:default-node-token). */
export const DEFAULT_NODE_TOKEN_GROUP = 'system:bootstrappers:corectl:default-node-token';
