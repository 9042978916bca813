/**
 * A CertificateSigningRequest's PKCS#10 request (spec.request: base64 of PEM), parsed into what
 * the signer rules and the approver look at: the subject's common name and organizations and the
 * subjectAltNames by kind, as Go's x509.ParseCertificateRequest exposes them.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { loadX509, type X509 } from './x509.js';

export interface ParsedRequest {
  /** The last CN attribute of the subject (Go keeps the last one). */
  commonName: string;
  /** Every O attribute, in order. */
  organizations: string[];
  dnsNames: string[];
  emailAddresses: string[];
  ipAddresses: string[];
  uris: string[];
  /** The parsed request, for signing. */
  pkcs10: X509.Pkcs10CertificateRequest;
}

const SAN_OID = '2.5.29.17';

/** The first PEM block of `pem` when it is a CERTIFICATE REQUEST (Kubernetes' ParseCSR rule). */
function requestDer(pem: string): Buffer {
  const m = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/.exec(pem);
  if (!m || m[1] !== 'CERTIFICATE REQUEST') throw new Error('PEM block type must be CERTIFICATE REQUEST');
  return Buffer.from((m[2] ?? '').replace(/\s+/g, ''), 'base64');
}

/** Parses spec.request; throws when it is not a PEM CERTIFICATE REQUEST or does not decode. */
export async function parseRequest(csr: KubeObject): Promise<ParsedRequest> {
  const x509 = await loadX509();
  const spec = (csr.spec ?? {}) as { request?: string };
  const der = requestDer(Buffer.from(spec.request ?? '', 'base64').toString('latin1'));
  const pkcs10 = new x509.Pkcs10CertificateRequest(der);
  const out: ParsedRequest = {
    commonName: pkcs10.subjectName.getField('CN').at(-1) ?? '',
    organizations: pkcs10.subjectName.getField('O'),
    dnsNames: [], emailAddresses: [], ipAddresses: [], uris: [], pkcs10,
  };
  const san = pkcs10.getExtension(SAN_OID);
  if (san) {
    for (const n of new x509.SubjectAlternativeNameExtension(san.rawData).names.items) {
      if (n.type === 'dns') out.dnsNames.push(n.value);
      else if (n.type === 'email') out.emailAddresses.push(n.value);
      else if (n.type === 'ip') out.ipAddresses.push(n.value);
      else if (n.type === 'url') out.uris.push(n.value);
    }
  }
  return out;
}
