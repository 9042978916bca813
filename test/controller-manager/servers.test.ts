import t from 'tap';
import { get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { run } from '../../src/daemons/controller-manager/main.js';
import { freePort } from '../helpers/apiserver.js';
import { DEPLOY, RS, startCluster, waitFor } from './fixtures/cluster.js';

interface Reply { status: number; body: string; type: string }

function fetchHttp(port: number, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), type: String(res.headers['content-type'] ?? '') }));
    }).on('error', reject);
  });
}

function fetchHttps(port: number, path: string, client?: { cert: Buffer; key: Buffer }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, rejectUnauthorized: false, ...(client ?? {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('health, metrics, profiling and leader election', async (t) => {
  const certDir = await mkdtemp(join(tmpdir(), 'corectl-cm-certs-'));
  const [port, securePort] = [await freePort(), await freePort()];
  const c = await startCluster([
    `--port=${port}`, '--address=127.0.0.1', `--secure-port=${securePort}`, '--bind-address=127.0.0.1', `--cert-dir=${certDir}`,
    '--profiling=true', '--controllers=deployment,replicaset',
    '--leader-elect=true', '--leader-elect-resource-lock=leases',
    '--leader-elect-lease-duration=4s', '--leader-elect-renew-deadline=3s', '--leader-elect-retry-period=500ms',
  ]);
  t.teardown(async () => { await c.stop(); await rm(certDir, { recursive: true, force: true }); });

  await waitFor('listening', async () => (await fetchHttp(port, '/healthz').catch(() => undefined))?.status === 200);

  await t.test('insecure port', async (t) => {
    t.match(await fetchHttp(port, '/healthz'), { status: 200, body: 'ok' });
    const m = await fetchHttp(port, '/metrics');
    t.equal(m.status, 200);
    t.match(m.body, /process_cpu_user_seconds_total/);
    const idx = await fetchHttp(port, '/debug/pprof/');
    t.equal(idx.status, 200);
    t.match(idx.body, /profile/);
    const prof = await fetchHttp(port, '/debug/pprof/profile?seconds=1');
    t.equal(prof.status, 200);
    t.match(prof.type, /application\/json/);
    const parsed = JSON.parse(prof.body) as { nodes?: unknown[]; startTime?: number };
    t.ok(Array.isArray(parsed.nodes) && parsed.nodes.length > 0, 'a V8 CPU profile');
    const heap = await fetchHttp(port, '/debug/pprof/heap');
    t.equal(heap.status, 501, 'other profiles say they are not available');
    t.match(heap.body, /not available/);
    t.equal((await fetchHttp(port, '/nope')).status, 404);
  });

  await t.test('secure port', async (t) => {
    t.match(await fetchHttps(securePort, '/healthz'), { status: 200, body: 'ok' }, 'health needs no credentials');
    // Delegated: the API server answers the SubjectAccessReview (AlwaysAllow here, so anonymous
    // passes, as on Kubernetes). The refusals under RBAC
    // are in test/e2e/security.test.ts and test/scheduler/servers.test.ts.
    t.equal((await fetchHttps(securePort, '/metrics')).status, 200, 'anonymous, authorized by the API server (AlwaysAllow)');
    const client = { cert: await readFile(c.api.clientCertFile), key: await readFile(c.api.clientKeyFile) };
    const m = await fetchHttps(securePort, '/metrics', client);
    t.equal(m.status, 200);
    t.match(m.body, /process_cpu_user_seconds_total/);
    t.ok((await readFile(join(certDir, 'controller-manager.crt'), 'utf8')).includes('BEGIN CERTIFICATE'), 'self-signed pair kept in --cert-dir');
  });

  await t.test('the leader holds the lease and runs the controllers', async (t) => {
    const LEASES = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'kube-system' };
    const lease = await waitFor('lease', async () => {
      const l = await c.client.get(LEASES, 'kube-controller-manager').catch(() => undefined);
      return (l?.spec as { holderIdentity?: string } | undefined)?.holderIdentity ? l : undefined;
    });
    t.ok((lease.spec as { holderIdentity: string }).holderIdentity, 'a holder');
    await c.client.create(DEPLOY, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'led' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'led' } }, template: { metadata: { labels: { app: 'led' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
    });
    await waitFor('replica set', async () => (await c.client.list(RS, { labelSelector: 'app=led' })).items.length === 1);
    t.pass('deployment controller runs under leadership');
    // A standby instance takes over when the leader stops (it releases the lease on a clean stop).
    const first = (lease.spec as { holderIdentity: string }).holderIdentity;
    const standby = new AbortController();
    const { config } = parseControllerManagerArgs([
      `--coreconfig=${c.api.coreconfigPath}`, '--port=0', '--controllers=deployment,replicaset', '--leader-elect=true', '--leader-elect-resource-lock=leases',
      '--leader-elect-lease-duration=4s', '--leader-elect-renew-deadline=3s', '--leader-elect-retry-period=500ms',
    ]);
    const second = run(config, { log: pino({ level: 'silent' }), signal: standby.signal });
    t.teardown(async () => { standby.abort(); await second.catch(() => undefined); });
    await c.stopManager();
    const taken = await waitFor('takeover', async () => {
      const l = await c.client.get(LEASES, 'kube-controller-manager');
      const h = (l.spec as { holderIdentity?: string }).holderIdentity;
      return h && h !== first ? h : undefined;
    }, 20_000);
    t.not(taken, first, 'the standby now holds the lease');
    await c.client.create(DEPLOY, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'led2' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'led2' } }, template: { metadata: { labels: { app: 'led2' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
    });
    await waitFor('replica set from the new leader', async () => (await c.client.list(RS, { labelSelector: 'app=led2' })).items.length === 1);
    t.pass('the new leader runs the controllers');
    standby.abort();
    t.equal(await second, 0, 'clean stop');
    const released = await c.client.get(LEASES, 'kube-controller-manager');
    t.equal((released.spec as { holderIdentity?: string }).holderIdentity ?? '', '', 'the lease is released on a clean stop');
  });
});

t.test('the default lock kind (endpoints) keeps the record in an annotation', async (t) => {
  const c = await startCluster(['--leader-elect=true', '--controllers=replicaset']);
  t.teardown(() => c.stop());
  const ENDPOINTS = { group: '', version: 'v1', resource: 'endpoints', namespace: 'kube-system' };
  const ep = await waitFor('lock object', async () => c.client.get(ENDPOINTS, 'kube-controller-manager').catch(() => undefined));
  const rec = JSON.parse(ep.metadata?.annotations?.['control-plane.alpha.kubernetes.io/leader'] ?? '{}') as { holderIdentity?: string; leaseDurationSeconds?: number };
  t.ok(rec.holderIdentity, 'a holder');
  t.equal(rec.leaseDurationSeconds, 15, '--leader-elect-lease-duration default');
});

t.test('the insecure port serves /debug/pprof only with --profiling (issue 27: it is unauthenticated)', async (t) => {
  const { startServers } = await import('../../src/daemons/controller-manager/servers.js');
  for (const profiling of [false, true]) {
    const ac = new AbortController();
    const port = await freePort();
    const certDir = await mkdtemp(join(tmpdir(), 'corectl-cm-pprof-'));
    const s = await startServers({ address: '127.0.0.1', port, bindAddress: '127.0.0.1', securePort: 0, certDir, profiling }, pino({ level: 'silent' }), ac.signal);
    try {
      t.equal((await fetchHttp(port, '/healthz')).status, 200, 'the insecure port keeps serving health');
      for (const path of ['/debug/pprof', '/debug/pprof/', '/debug/pprof/profile?seconds=1', '/debug/pprof/heap']) {
        const r = await fetchHttp(port, path);
        if (profiling) t.not(r.status, 404, `--profiling=true: ${path}`);
        else t.same(r, { status: 404, body: '404 page not found\n', type: r.type }, `--profiling=false: ${path}`);
      }
    } finally {
      ac.abort();
      await s.close();
      await rm(certDir, { recursive: true, force: true });
    }
  }
  const { config } = parseControllerManagerArgs([]);
  t.equal(config.profiling, true, 'the reference\'s default stays --profiling=true');
});
