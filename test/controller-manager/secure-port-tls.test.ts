// The controller manager's secure port honours --tls-sni-cert-key (the pair for the client's
// server name, the default pair otherwise) and --http2-max-streams-per-connection (advertised
// in the HTTP/2 SETTINGS; 250 when unset), as the API server's does; HTTP/1.1 still works.
import t from 'tap';
import * as http2 from 'node:http2';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { request } from 'node:https';
import { pino } from 'pino';
import { startServers } from '../../src/daemons/controller-manager/servers.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { createSelfSignedServing } from '../../src/util/pki.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-cm-tls-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

function peerNames(port: number, servername?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(servername ? { servername } : {}), ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw).subjectAltName ?? '');
    });
    s.on('error', reject);
  });
}

function maxStreams(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const c = http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
    c.on('error', reject);
    c.once('remoteSettings', (st) => { c.close(); resolve(st.maxConcurrentStreams); });
  });
}

t.test('--tls-sni-cert-key and --http2-max-streams-per-connection', async (t) => {
  const sni = await createSelfSignedServing({ host: 'cm-sni', dnsNames: ['cm.example.test'], ips: [] });
  await writeFile(join(dir, 'sni.crt'), sni.certPem);
  await writeFile(join(dir, 'sni.key'), sni.keyPem);
  // securePort 0 in startServers means "off": bind a real one through a free port.
  const { default: net } = await import('node:net');
  const free = await new Promise<number>((r) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => r(p)); }); });
  const { config } = parseControllerManagerArgs([`--tls-sni-cert-key=${join(dir, 'sni.crt')},${join(dir, 'sni.key')}`, '--http2-max-streams-per-connection=17']);
  const ac = new AbortController();
  const s = await startServers({
    address: '127.0.0.1', port: 0, bindAddress: '127.0.0.1', securePort: free, certDir: dir, profiling: false,
    tlsSniCertKey: config.tlsSniCertKey, http2MaxStreamsPerConnection: config.http2MaxStreamsPerConnection,
  }, pino({ level: 'silent' }), ac.signal);
  t.teardown(async () => { ac.abort(); await s.close(); });
  t.match(await peerNames(s.httpsPort, 'cm.example.test'), /DNS:cm\.example\.test/, 'the SNI pair for its name');
  t.notMatch(await peerNames(s.httpsPort, 'other.example.test'), /cm\.example\.test/, 'the default pair for other names');
  t.equal(await maxStreams(s.httpsPort), 17, 'SETTINGS_MAX_CONCURRENT_STREAMS');
  const status = await new Promise<number>((resolve, reject) => {
    request({ host: '127.0.0.1', port: s.httpsPort, path: '/healthz', rejectUnauthorized: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on('error', reject).end();
  });
  t.equal(status, 200, 'HTTP/1.1 clients are still served');

  const plainPort = await new Promise<number>((r) => { const x = net.createServer().listen(0, '127.0.0.1', () => { const p = (x.address() as { port: number }).port; x.close(() => r(p)); }); });
  const ac2 = new AbortController();
  const d = await startServers({ address: '127.0.0.1', port: 0, bindAddress: '127.0.0.1', securePort: plainPort, certDir: dir, profiling: false }, pino({ level: 'silent' }), ac2.signal);
  t.teardown(async () => { ac2.abort(); await d.close(); });
  t.equal(await maxStreams(d.httpsPort), 250, 'unset: Go\'s default 250');
});
