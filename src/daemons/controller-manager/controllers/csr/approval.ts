/**
 * Writes a CertificateSigningRequest's Approved or Denied condition the way `kubectl certificate
 * approve|deny` does: an update of the approval subresource carrying the read resourceVersion
 * (a 409 means someone else changed it; the caller retries from a fresh read).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { RestClient } from '../../deps.js';
import { CERTIFICATES_V1 } from './conditions.js';

export function updateApproval(client: RestClient, csr: KubeObject): Promise<KubeObject> {
  return client.update(CERTIFICATES_V1, csr, { subresource: 'approval' });
}
