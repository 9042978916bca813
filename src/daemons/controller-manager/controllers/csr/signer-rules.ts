/**
 * What each built-in signer accepts (Kubernetes' per-signer checks in the signing controller and
 * in pkg/apis/certificates helpers). A rule returns undefined when the request may be signed, or
 * the message of the Failed condition (reason SignerValidationFailure) when it may not.
 *
 *  - kube-apiserver-client: usages within {digital signature, key encipherment, client auth},
 *    client auth required; any subject.
 *  - kube-apiserver-client-kubelet: O exactly [system:nodes], CN system:node:<name>, no SANs,
 *    usages exactly {digital signature, key encipherment, client auth} (or without key
 *    encipherment, for non-RSA keys).
 *  - kubelet-serving: O exactly [system:nodes], CN system:node:<name>, at least one DNS or IP
 *    SAN, no email or URI SANs, usages exactly {digital signature, key encipherment, server auth}
 *    (or without key encipherment).
 *  - legacy-unknown (objects made through v1beta1): no restrictions, as in Kubernetes.
 */
import type { ParsedRequest } from './request.js';

export const KUBE_APISERVER_CLIENT = 'kubernetes.io/kube-apiserver-client';
export const KUBE_APISERVER_CLIENT_KUBELET = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING = 'kubernetes.io/kubelet-serving';
export const LEGACY_UNKNOWN = 'kubernetes.io/legacy-unknown';

export type SignerRule = (req: ParsedRequest, usages: readonly string[]) => string | undefined;

const NODE_PREFIX = 'system:node:';
const NODES_GROUP = 'system:nodes';

/** Set equality of the requested usages with one of the allowed sets. */
function usagesMatch(usages: readonly string[], allowed: readonly (readonly string[])[]): boolean {
  const have = new Set(usages);
  return allowed.some((set) => set.length === have.size && set.every((u) => have.has(u)));
}

/** Go prints a sorted string set as "[a b c]". */
function goList(items: readonly string[]): string {
  return `[${[...items].sort().join(' ')}]`;
}

function organizationIsNodes(req: ParsedRequest): boolean {
  return req.organizations.length === 1 && req.organizations[0] === NODES_GROUP;
}

const CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];
const SERVING_USAGES = ['digital signature', 'key encipherment', 'server auth'];

export function kubeletClientRule(req: ParsedRequest, usages: readonly string[]): string | undefined {
  if (!organizationIsNodes(req)) return 'subject organization is not system:nodes';
  if (req.dnsNames.length) return 'DNS subjectAltNames are not allowed';
  if (req.emailAddresses.length) return 'Email subjectAltNames are not allowed';
  if (req.ipAddresses.length) return 'IP subjectAltNames are not allowed';
  if (req.uris.length) return 'URI subjectAltNames are not allowed';
  if (!req.commonName.startsWith(NODE_PREFIX)) return 'subject common name does not begin with system:node:';
  if (!usagesMatch(usages, [CLIENT_USAGES, ['digital signature', 'client auth']])) return `usages did not match ${goList(CLIENT_USAGES)}`;
  return undefined;
}

export function kubeletServingRule(req: ParsedRequest, usages: readonly string[]): string | undefined {
  if (!organizationIsNodes(req)) return 'subject organization is not system:nodes';
  if (!req.dnsNames.length && !req.ipAddresses.length) return 'DNS or IP subjectAltName is required';
  if (req.emailAddresses.length) return 'Email subjectAltNames are not allowed';
  if (req.uris.length) return 'URI subjectAltNames are not allowed';
  if (!usagesMatch(usages, [SERVING_USAGES, ['digital signature', 'server auth']])) return `usages did not match ${goList(SERVING_USAGES)}`;
  if (!req.commonName.startsWith(NODE_PREFIX)) return 'subject common name does not begin with system:node:';
  return undefined;
}

export function apiServerClientRule(_req: ParsedRequest, usages: readonly string[]): string | undefined {
  let clientAuth = false;
  for (const u of usages) {
    if (u === 'client auth') clientAuth = true;
    else if (u !== 'digital signature' && u !== 'key encipherment') return `invalid usage for client certificate: ${u}`;
  }
  return clientAuth ? undefined : 'missing required usage for client certificate: client auth';
}

/** The rule of a signer this controller signs for; undefined for any other signer name. */
export function ruleFor(signerName: string): SignerRule | undefined {
  switch (signerName) {
    case KUBE_APISERVER_CLIENT: return apiServerClientRule;
    case KUBE_APISERVER_CLIENT_KUBELET: return kubeletClientRule;
    case KUBELET_SERVING: return kubeletServingRule;
    case LEGACY_UNKNOWN: return () => undefined;
    default: return undefined;
  }
}
