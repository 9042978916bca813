import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import type { RequestContext } from '../../src/daemons/apiserver/context.js';
import { startServing } from '../../src/daemons/apiserver/serve.js';
import { withServingDefaults } from '../../src/daemons/apiserver/serving-options.js';
import { splitPemCertificates } from '../../src/util/pki.js';
import { h1request, h2request, startApiserver } from '../helpers/apiserver.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';

const log = pino({ level: 'silent' });

/** A REST stub: /api/v1/namespaces/x/pods/panic throws, upgrades echo, everything else echoes ctx. */
function stubRest(seen: RequestContext[]): RestHandler {
  return {
    async handle(ctx, _req, res) {
      seen.push(ctx);
      if (ctx.info.name === 'panic') throw new Error('boom');
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ verb: ctx.info.verb, user: ctx.user }));
    },
    handleUpgrade(ctx, _req, socket) {
      seen.push(ctx);
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\nX-Verb: ${ctx.info.verb}\r\n\r\n`);
      socket.on('data', (d: Buffer) => socket.write(d));
    },
  };
}

t.test('TLS + HTTP/2 and HTTP/1.1: health, version, metrics, errors', async (t) => {
  const seen: RequestContext[] = [];
  const s = await startApiserver({ rest: stubRest(seen) });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);

  for (const send of [h2request, h1request]) {
    const health = await send(s.url, { path: '/healthz', ca });
    t.equal(health.status, 200, `${health.protocol} /healthz`);
    t.equal(health.body, 'ok');
    t.match(String(health.headers['content-type']), /^text\/plain/);
    t.equal((await send(s.url, { path: '/livez', ca })).body, 'ok');
    const ready = await send(s.url, { path: '/readyz?verbose', ca });
    t.equal(ready.status, 200);
    t.match(ready.body, /\[\+\]ping ok\n/);
    t.match(ready.body, /readyz check passed\n$/);
    t.equal((await send(s.url, { path: '/healthz/ping', ca })).body, 'ok');
    t.equal((await send(s.url, { path: '/readyz/nope', ca })).status, 404);
    t.match((await send(s.url, { path: '/livez?verbose&exclude=log', ca })).body, /\[\+\]log excluded: ok/);

    const version = await send(s.url, { path: '/version?timeout=32s', ca });
    t.equal(version.status, 200);
    const v = JSON.parse(version.body) as Record<string, string>;
    t.match(v.gitVersion ?? '', /^v\d+\.\d+\.\d+/);
    t.same(Object.keys(v).sort(), ['buildDate', 'compiler', 'gitCommit', 'gitTreeState', 'gitVersion', 'goVersion', 'major', 'minor', 'platform']);

    const metrics = await send(s.url, { path: '/metrics', ca });
    t.equal(metrics.status, 200);
    t.match(metrics.body, /apiserver_request_total\{verb="GET",group="",version="",resource="",subresource="",code="200"\} \d+/);
    t.match(metrics.body, /apiserver_request_duration_seconds_bucket/);
    t.match(metrics.body, /apiserver_current_inflight_requests/);
    t.match(metrics.body, /process_cpu_user_seconds_total/);
  }
  const h1 = await h1request(s.url, { path: '/healthz', ca });
  t.equal(h1.protocol, 'http/1.1');

  // A throwing handler: 500 Status, and the server keeps serving.
  const panic = await h2request(s.url, { path: '/api/v1/namespaces/x/pods/panic', ca });
  t.equal(panic.status, 500);
  const st = JSON.parse(panic.body) as { kind: string; reason: string; code: number };
  t.same([st.kind, st.reason, st.code], ['Status', 'InternalError', 500]);
  const panic1 = await h1request(s.url, { path: '/api/v1/namespaces/x/pods/panic', ca });
  t.equal(panic1.status, 500);
  t.equal((await h2request(s.url, { path: '/healthz', ca })).status, 200, 'still serving');

  const list = await h2request(s.url, { path: '/api/v1/namespaces/x/pods', ca });
  t.equal(JSON.parse(list.body).verb, 'list', 'resource requests reach the REST layer');
  const after = await h2request(s.url, { path: '/metrics', ca });
  t.match(after.body, /apiserver_request_total\{verb="LIST",group="",version="v1",resource="pods",subresource="",code="200"\} 1/);
  t.match(after.body, /apiserver_request_total\{verb="GET",group="",version="v1",resource="pods",subresource="",code="500"\} 2/);
});

t.test('unknown paths without a REST layer are 404 Status', async (t) => {
  const s = await startApiserver({ servingOnly: true });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const r = await h2request(s.url, { path: '/api/v1/pods', ca });
  t.equal(r.status, 404);
  t.match(JSON.parse(r.body), { kind: 'Status', reason: 'NotFound', code: 404 });
});

t.test('HTTP/1.1 upgrades go through the chain to handleUpgrade', async (t) => {
  const seen: RequestContext[] = [];
  const s = await startApiserver({ rest: stubRest(seen) });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const cert = await readFile(s.clientCertFile);
  const key = await readFile(s.clientKeyFile);
  const talk = (path: string) => new Promise<string>((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port: s.port, ca, cert, key, ALPNProtocols: ['http/1.1'] }, () => {
      sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n`);
    });
    let buf = '';
    sock.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('\r\n\r\n') && buf.startsWith('HTTP/1.1 101') && !buf.includes('ping')) sock.write('ping');
      if (buf.includes('ping') || (!buf.startsWith('HTTP/1.1 101') && buf.includes('}'))) { sock.end(); resolve(buf); }
    });
    sock.on('error', reject);
  });
  const ok = await talk('/api/v1/namespaces/a/pods/p/exec?command=ls');
  t.match(ok, /^HTTP\/1\.1 101/);
  t.match(ok, /X-Verb: connect/);
  t.match(ok, /ping$/);
  t.equal(seen.at(-1)?.user.name, 'admin', 'upgrades are authenticated');
  const bad = await talk('/not-a-resource');
  t.match(bad, /^HTTP\/1\.1 404/);
  t.match(bad, /"reason":"NotFound"/);
});

t.test('self-signed serving pair is generated once and reused', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-selfsigned-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const options = withServingDefaults({ bindAddress: '127.0.0.1', certDir: dir, serviceClusterIpRange: '10.96.0.0/12' });
  const peer = async (port: number, ca?: string) => new Promise<tls.PeerCertificate>((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ...(ca ? { ca } : { rejectUnauthorized: false }) }, () => {
      const c = sock.getPeerCertificate();
      sock.end();
      resolve(c);
    });
    sock.on('error', reject);
  });
  const first = await startServing({ options, log, portOverride: 0 });
  t.ok(first.serving?.generated, 'generated on first start');
  const pem = await readFile(join(dir, 'apiserver.crt'), 'utf8');
  t.ok(existsSync(join(dir, 'apiserver.key')));
  const [leaf, caPem] = splitPemCertificates(pem);
  t.ok(leaf && caPem, 'certificate file holds the leaf then its CA');
  const x = new X509Certificate(leaf ?? '');
  t.match(x.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
  t.match(x.subjectAltName ?? '', /IP Address:10\.96\.0\.1/);
  t.match(x.subjectAltName ?? '', /DNS:kubernetes\.default\.svc/);
  t.match(x.subjectAltName ?? '', /DNS:localhost/);
  const fp1 = (await peer(first.server?.port ?? 0, caPem)).fingerprint256;
  await first.stop(200);

  const second = await startServing({ options, log, portOverride: 0 });
  t.teardown(() => second.stop(200));
  t.notOk(second.serving?.generated, 'reused on restart');
  t.equal((await peer(second.server?.port ?? 0)).fingerprint256, fp1, 'same certificate served');
});

t.test('--secure-port=0 switches the listener off', async (t) => {
  const serving = await startServing({ options: withServingDefaults({ securePort: 0 }), log });
  t.equal(serving.server, undefined);
  await serving.stop();
});

t.test('TLS options: min version, cipher suites, HTTP/2 max streams', async (t) => {
  const s = await startApiserver({ servingOnly: true, serving: { tlsMinVersion: 'VersionTLS13', http2MaxStreamsPerConnection: 7 } });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const handshake = (opts: tls.ConnectionOptions) => new Promise<string>((resolve) => {
    const sock = tls.connect({ host: '127.0.0.1', port: s.port, ca, ...opts }, () => { const v = sock.getProtocol() ?? ''; sock.end(); resolve(v); });
    sock.on('error', (e) => resolve(`error: ${e.message}`));
  });
  t.equal(await handshake({}), 'TLSv1.3');
  t.match(await handshake({ maxVersion: 'TLSv1.2' }), /^error/, 'TLS 1.2 refused with VersionTLS13');

  const settings = await new Promise<http2.Settings>((resolve, reject) => {
    const c = http2.connect(s.url, { ca });
    c.on('error', reject);
    c.on('remoteSettings', (st) => { c.close(); resolve(st); });
  });
  t.equal(settings.maxConcurrentStreams, 7);

  const s12 = await startApiserver({ servingOnly: true, serving: { tlsCipherSuites: ['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256'] } });
  t.teardown(() => s12.stop());
  const cipher = await new Promise<string>((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port: s12.port, ca: s12.ca.certPem, maxVersion: 'TLSv1.2' }, () => { const c = sock.getCipher().name; sock.end(); resolve(c); });
    sock.on('error', reject);
  });
  t.equal(cipher, 'ECDHE-ECDSA-AES128-GCM-SHA256');
  await t.rejects(startApiserver({ servingOnly: true, serving: { tlsCipherSuites: ['TLS_BOGUS'] } }), /--tls-cipher-suites: unknown cipher suite "TLS_BOGUS"/);
  await t.rejects(startApiserver({ servingOnly: true, serving: { tlsMinVersion: 'VersionTLS99' } }), /--tls-min-version/);
});

function findKubectl(): string | undefined {
  return kubectlBinary(33);
}

const kubectl = findKubectl();
t.test('kubectl get --raw /healthz with a client certificate', { skip: kubectl ? false : 'kubectl.1.33 not installed' }, async (t) => {
  if (!kubectl) return;
  const s = await startApiserver({ servingOnly: true, serving: { anonymousAuth: false } });
  t.teardown(() => s.stop());
  const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(kubectl, ['get', '--raw', '/healthz', '--kubeconfig', s.coreconfigPath, '--cache-dir', join(s.dir, 'kcache')], { timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
  t.equal(out.code, 0, out.stderr);
  t.equal(out.stdout.trim(), 'ok');
  const version = await new Promise<string>((resolve) => {
    execFile(kubectl, ['version', '-o', 'json', '--kubeconfig', s.coreconfigPath, '--cache-dir', join(s.dir, 'kcache')], { timeout: 30_000 }, (_e, stdout) => resolve(stdout));
  });
  t.match(JSON.parse(version), { serverVersion: { major: '1' } });
});
