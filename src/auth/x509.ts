/**
 * Client-certificate authentication (--client-ca-file). The TLS listener asks for a certificate
 * without rejecting the handshake and verifies it against the client CA; this authenticator then
 * maps a verified certificate to a user: CommonName → name, Organizations → groups. When the
 * listener also accepts another CA's certificates (--requestheader-client-ca-file), `bundle`
 * holds the client CA and the chain must lead to it.
 */
import type { PeerCertificate } from 'node:tls';
import { NOT_APPLICABLE, type AuthRequest, type AuthResult, type Authenticator } from './authenticator.js';
import type { CaBundle } from './authenticators/ca-bundle.js';

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

function values(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

function hasCertificate(c: PeerCertificate | undefined): c is PeerCertificate {
  return !!c && Object.keys(c).length > 0 && !!c.raw;
}

export class X509Authenticator implements Authenticator {
  readonly name = 'x509';
  constructor(private readonly bundle?: CaBundle) {}

  async authenticate(req: AuthRequest): Promise<AuthResult> {
    const cert = req.tls?.peerCertificate;
    if (!hasCertificate(cert)) return NOT_APPLICABLE;
    if (!req.tls?.authorized) {
      const why = req.tls?.authorizationError ?? 'certificate signed by unknown authority';
      return { ok: false, error: `x509: ${why}` };
    }
    const why = this.bundle?.verify(req.tls);
    if (why) return { ok: false, error: `x509: ${why}` };
    // The handshake checked the validity window once; a long-lived connection outlives it, so
    // each authentication checks it again (as Kubernetes verifies on every request).
    const now = Date.now();
    if (now > Date.parse(cert.valid_to) || now < Date.parse(cert.valid_from)) {
      return { ok: false, error: 'x509: certificate has expired or is not yet valid' };
    }
    const eku = (cert as PeerCertificate & { ext_key_usage?: string[] }).ext_key_usage;
    if (eku && eku.length && !eku.includes(CLIENT_AUTH_OID)) {
      return { ok: false, error: 'x509: certificate specifies an incompatible key usage' };
    }
    const name = values(cert.subject?.CN)[0] ?? '';
    if (!name) return { ok: false, error: 'x509: common name of the user is empty' };
    return { ok: true, method: this.name, user: { name, groups: values(cert.subject?.O) } };
  }
}
