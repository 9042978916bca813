/**
 * Reading and extending a CertificateSigningRequest's status: its conditions (Approved, Denied,
 * Failed) and its issued certificate, with the meanings Kubernetes' certificate controllers give
 * them. Conditions added here carry both timestamps (the API server would fill them in too), and
 * the cleaner ages conditions by them.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { metaTime } from '../../../../api/meta/time.js';

export const CERTIFICATES_V1 = { group: 'certificates.k8s.io', version: 'v1', resource: 'certificatesigningrequests' } as const;

export const APPROVED = 'Approved';
export const DENIED = 'Denied';
export const FAILED = 'Failed';

export interface CsrCondition {
  type: string;
  status?: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

type Dict = Record<string, unknown>;

export function conditionsOf(csr: KubeObject): CsrCondition[] {
  const c = ((csr.status ?? {}) as Dict).conditions;
  return Array.isArray(c) ? (c as CsrCondition[]) : [];
}

/** status.certificate (base64 of PEM in JSON); '' when none was issued. */
export function certificateOf(csr: KubeObject): string {
  const c = ((csr.status ?? {}) as Dict).certificate;
  return typeof c === 'string' ? c : '';
}

/** Kubernetes' GetCertApprovalCondition: the presence of either type counts, whatever its status. */
export function approvalOf(csr: KubeObject): { approved: boolean; denied: boolean } {
  const types = new Set(conditionsOf(csr).map((c) => c.type));
  return { approved: types.has(APPROVED), denied: types.has(DENIED) };
}

/** Approved and not denied (IsCertificateRequestApproved). */
export function isApproved(csr: KubeObject): boolean {
  const a = approvalOf(csr);
  return a.approved && !a.denied;
}

export function hasTrueCondition(csr: KubeObject, type: string): boolean {
  return conditionsOf(csr).some((c) => c.type === type && c.status === 'True');
}

/** A copy of `csr` whose status has `condition` (status True, timestamps `now`) appended. */
export function withCondition(csr: KubeObject, condition: { type: string; reason: string; message: string }, now: number): KubeObject {
  const t = metaTime(now);
  const status = { ...((csr.status ?? {}) as Dict) };
  status.conditions = [...conditionsOf(csr), { ...condition, status: 'True', lastUpdateTime: t, lastTransitionTime: t }];
  return { ...csr, status };
}
