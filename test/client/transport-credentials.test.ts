// Certificate rotation without a restart: after updateClientCertificate the transport's next
// request presents the new client certificate (a new TLS session), a request already running
// on the old session finishes there, and the old session is closed. The caller's connection
// object is left as it was.
import t from 'tap';
import * as http2 from 'node:http2';
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { Http2Transport, readBody } from '../../src/client/transport.js';
import { createCA, issueCert } from '../../src/util/pki.js';

t.test('the next request presents the new certificate; a running one finishes on the old session', async (t) => {
  const ca = await createCA({ commonName: 'test-ca' });
  const serving = await issueCert({ ca, commonName: 'localhost', ips: ['127.0.0.1'], usages: 'server' });
  const first = await issueCert({ ca, commonName: 'system:node:n1', organizations: ['system:nodes'], usages: 'client' });
  const second = await issueCert({ ca, commonName: 'system:node:n1', organizations: ['system:nodes'], usages: 'client' });
  const serial = (pem: string): string => new X509Certificate(pem).serialNumber;
  const server = http2.createSecureServer({ cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true });
  const sessions = new Set<http2.ServerHttp2Session>();
  let hold: (() => void) | undefined;
  server.on('session', (s) => { sessions.add(s); });
  // Answers with the client certificate's serial; /slow only when `hold` is called.
  server.on('stream', (stream, headers) => {
    const peer = (stream.session?.socket as TLSSocket).getPeerCertificate();
    const answer = (): void => { stream.respond({ ':status': 200 }); stream.end(peer.serialNumber); };
    if (headers[':path'] === '/slow') hold = answer;
    else answer();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const conn = { server: url, ca: Buffer.from(ca.certPem), cert: Buffer.from(first.certPem), key: Buffer.from(first.keyPem) };
  const transport = new Http2Transport(conn);
  t.teardown(async () => { transport.close(); for (const s of sessions) s.destroy(); await new Promise((r) => server.close(r)); });
  const get = async (path: string): Promise<string> => (await readBody((await transport.request({ method: 'GET', path })).body)).toString().toUpperCase();

  t.equal(await get('/a'), serial(first.certPem).toUpperCase(), 'the first certificate');
  const slow = transport.request({ method: 'GET', path: '/slow' });
  for (let i = 0; i < 200 && !hold; i++) await new Promise((r) => setTimeout(r, 10));
  transport.updateClientCertificate(Buffer.from(second.certPem), Buffer.from(second.keyPem));
  t.equal(await get('/b'), serial(second.certPem).toUpperCase(), 'the next request presents the new certificate');
  t.equal(sessions.size, 2, 'on a new connection');
  hold?.();
  t.equal((await readBody((await slow).body)).toString().toUpperCase(), serial(first.certPem).toUpperCase(), 'the running request finished on the old session');
  t.equal(conn.cert.toString(), first.certPem, 'the caller\'s connection object is unchanged');
});
