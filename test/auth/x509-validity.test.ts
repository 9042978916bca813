// A client certificate is checked for its validity window on every authentication, not only at
// the TLS handshake: a connection that outlives its certificate is refused from then on.
import t from 'tap';
import type { PeerCertificate } from 'node:tls';
import { X509Authenticator } from '../../src/auth/x509.js';

function request(validFrom: Date, validTo: Date) {
  const cert = { raw: Buffer.from('x'), subject: { CN: 'alice', O: ['dev'] }, valid_from: validFrom.toUTCString(), valid_to: validTo.toUTCString() } as unknown as PeerCertificate;
  return { headers: {}, tls: { authorized: true, peerCertificate: cert } };
}

t.test('the validity window is checked on each authentication', async (t) => {
  const x = new X509Authenticator();
  const hour = 3_600_000;
  const ok = await x.authenticate(request(new Date(Date.now() - hour), new Date(Date.now() + hour)));
  t.same(ok, { ok: true, method: 'x509', user: { name: 'alice', groups: ['dev'] } });
  const expired = await x.authenticate(request(new Date(Date.now() - 2 * hour), new Date(Date.now() - hour)));
  t.same(expired, { ok: false, error: 'x509: certificate has expired or is not yet valid' });
  const early = await x.authenticate(request(new Date(Date.now() + hour), new Date(Date.now() + 2 * hour)));
  t.equal(early.ok, false, 'not yet valid');
});
