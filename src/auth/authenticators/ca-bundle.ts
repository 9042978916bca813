/**
 * One authenticator's own certificate authorities. The TLS listener accepts client certificates
 * of every configured CA (--client-ca-file and --requestheader-client-ca-file), so "the
 * handshake verified it" only says some CA signed it; each authenticator then checks that the
 * chain the client presented leads to one of *its* roots, as Kubernetes verifies per
 * authenticator with its own x509.VerifyOptions. The verdict is kept per connection (the TLS
 * facts object is one per socket).
 */
import { X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate, PeerCertificate } from 'node:tls';
import type { AuthRequest } from '../authenticator.js';
import { splitPemCertificates } from '../../util/pki.js';

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';
const MAX_DEPTH = 10;

type TlsFacts = NonNullable<AuthRequest['tls']>;

export function hasCertificate(c: PeerCertificate | undefined): c is PeerCertificate {
  return !!c && Object.keys(c).length > 0 && !!c.raw;
}

export class CaBundle {
  private readonly roots: X509Certificate[];
  /** Per connection: undefined = trusted, else why not. */
  private readonly verdicts = new WeakMap<TlsFacts, string | undefined>();

  constructor(readonly pem: string) {
    this.roots = splitPemCertificates(pem).map((p) => new X509Certificate(p));
  }

  get size(): number { return this.roots.length; }

  /**
   * Undefined when the connection's client certificate was verified by the handshake and its
   * presented chain leads to one of these roots; otherwise the reason (as Go's x509 words it).
   */
  verify(tls: TlsFacts): string | undefined {
    if (this.verdicts.has(tls)) return this.verdicts.get(tls);
    const verdict = this.check(tls);
    this.verdicts.set(tls, verdict);
    return verdict;
  }

  private check(tls: TlsFacts): string | undefined {
    const peer = tls.peerCertificate;
    if (!peer || !hasCertificate(peer)) return 'no client certificate';
    // The handshake checked dates, signatures and CA constraints on its path to some root.
    if (!tls.authorized) return tls.authorizationError ?? 'certificate signed by unknown authority';
    const eku = (peer as PeerCertificate & { ext_key_usage?: string[] }).ext_key_usage;
    if (eku && eku.length && !eku.includes(CLIENT_AUTH_OID)) return 'certificate specifies an incompatible key usage';
    let cur: X509Certificate;
    try { cur = new X509Certificate(peer.raw); } catch { return 'certificate cannot be parsed'; }
    let link = peer as DetailedPeerCertificate;
    for (let depth = 0; depth < MAX_DEPTH; depth++) {
      for (const root of this.roots) {
        if (cur.fingerprint256 === root.fingerprint256) return undefined;
        if (cur.checkIssued(root) && cur.verify(root.publicKey)) return undefined;
      }
      const next = link.issuerCertificate;
      if (!next || next === link || !next.raw || next.raw.equals(link.raw)) break;
      let parent: X509Certificate;
      try { parent = new X509Certificate(next.raw); } catch { break; }
      // An intermediate must be a CA that signed the certificate below it.
      if (!parent.ca || !cur.checkIssued(parent) || !cur.verify(parent.publicKey)) break;
      cur = parent;
      link = next;
    }
    return 'certificate signed by unknown authority';
  }
}
