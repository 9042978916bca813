/**
 * Asking the cluster for a certificate the way Kubernetes' kubelet does: a fresh ECDSA P-256 key,
 * a PKCS#10 request for CN system:node:<name>, O system:nodes, sent as a CertificateSigningRequest
 * (certificates.k8s.io/v1) to one of the two kubelet signers, then polled until it carries a
 * certificate (Approved and signed), or is Denied or Failed.
 *
 * Usages are the kubelet's: digital signature plus client auth (kube-apiserver-client-kubelet)
 * or server auth (kubelet-serving); key encipherment only for RSA keys, and our keys are ECDSA.
 */
import { webcrypto } from 'node:crypto';
import type { KubeObject } from '../../../api/resources/types.js';
import type { RestClient } from '../../../client/rest-client.js';
import { loadX509 } from '../../../util/pki.js';

export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
const CSRS = { group: 'certificates.k8s.io', version: 'v1', resource: 'certificatesigningrequests' } as const;

export interface CertificateRequest {
  readonly signerName: typeof CLIENT_SIGNER | typeof SERVING_SIGNER;
  readonly nodeName: string;
  /** Serving requests only: the node's names and addresses. */
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  /** spec.expirationSeconds; absent lets the signer choose. */
  readonly expirationSeconds?: number;
}

export interface IssuedPair {
  readonly certPem: string;
  readonly keyPem: string;
  /** The CSR's name, for logs. */
  readonly csrName: string;
}

/** The CSR and key; separate from submitting so tests can look at the request itself. */
export async function makeRequest(r: CertificateRequest): Promise<{ csrPem: string; keyPem: string }> {
  const x509 = await loadX509();
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const sans = [
    ...(r.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(r.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ O: ['system:nodes'] }, { CN: [`system:node:${r.nodeName}`] }],
    keys, signingAlgorithm: alg,
    ...(sans.length ? { extensions: [new x509.SubjectAlternativeNameExtension(sans, false)] } : {}),
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { csrPem: csr.toString('pem') + '\n', keyPem: x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n' };
}

export function usagesFor(signerName: string): string[] {
  return ['digital signature', signerName === SERVING_SIGNER ? 'server auth' : 'client auth'];
}

interface CsrStatus { certificate?: string; conditions?: { type?: string; status?: string; reason?: string; message?: string }[] }

/** What a CSR's status says: the certificate PEM, a refusal, or nothing yet. */
export function csrOutcome(csr: KubeObject): { certPem?: string; refused?: string } {
  const st = (csr.status ?? {}) as CsrStatus;
  for (const c of st.conditions ?? []) {
    if ((c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False') {
      return { refused: `certificate signing request ${csr.metadata?.name ?? ''} is ${c.type.toLowerCase()}: ${c.reason ?? ''} ${c.message ?? ''}`.trim() };
    }
  }
  if (st.certificate) return { certPem: Buffer.from(st.certificate, 'base64').toString('utf8') };
  return {};
}

/**
 * Sends the request and waits for its certificate, polling (0.2 s growing to 2 s) until the
 * signal aborts. Throws on Denied/Failed and on API errors when sending.
 */
export async function requestCertificate(client: RestClient, r: CertificateRequest, signal: AbortSignal): Promise<IssuedPair> {
  const { csrPem, keyPem } = await makeRequest(r);
  const created = await client.create(CSRS, {
    metadata: { generateName: 'csr-' },
    spec: {
      request: Buffer.from(csrPem).toString('base64'), signerName: r.signerName, usages: usagesFor(r.signerName),
      ...(r.expirationSeconds !== undefined ? { expirationSeconds: r.expirationSeconds } : {}),
    },
  }, { signal });
  const name = created.metadata?.name ?? '';
  let delay = 200;
  let csr: KubeObject = created;
  for (;;) {
    const out = csrOutcome(csr);
    if (out.refused) throw new Error(out.refused);
    if (out.certPem) return { certPem: out.certPem, keyPem, csrName: name };
    await new Promise<void>((resolve, reject) => {
      if (signal.aborted) { reject(signal.reason as Error); return; }
      const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, delay);
      const onAbort = (): void => { clearTimeout(t); reject(signal.reason as Error); };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    delay = Math.min(delay * 2, 2000);
    try {
      csr = await client.get(CSRS, name, { signal });
    } catch (e) {
      if (signal.aborted) throw e;
      // A passing API error: ask again at the next turn.
    }
  }
}
