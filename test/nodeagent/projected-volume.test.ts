/**
 * Projected volumes in the node agent: a real API server (with TokenRequest) and an agent with
 * the fake runtime. The volume holds a pod-bound service-account token (audience,
 * expirationSeconds honoured; it authenticates at the API server), config-map, secret and
 * downward-API files with defaultMode and item modes. Refresh at 80 % of the token lifetime is
 * checked on ProjectedVolumes directly with short-lived tokens from a fake requester.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { ProjectedVolumes, type TokenRequestSpec } from '../../src/daemons/nodeagent/volumes/projected.js';
import type { VolumeContext } from '../../src/daemons/nodeagent/volumes/volumes.js';
import { h2request, startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';


const dir = await mkdtemp(join(tmpdir(), 'corectl-projected-'));
const keyFile = join(dir, 'sa.key');
await writeFile(keyFile, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
const api = await startApiserver({ args: ['--feature-gates=TokenRequest=true', `--service-account-signing-key-file=${keyFile}`] });
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const root = join(dir, 'node');
const { config } = parseNodeagentArgs([
  '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-v', `--root-dir=${root}`,
  `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
  '--address=127.0.0.1', '--resolv-conf=', '--event-qps=0', '--node-status-update-frequency=1s',
]);
const agent = await startNodeAgent(config, { podLogDir: join(root, 'logs'), relistPeriodMs: 100, skipProcessTweaks: true });
t.teardown(async () => {
  await agent.stop({ stopPods: true }).catch(() => undefined);
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

const ns = (resource: string): { group: string; version: string; resource: string; namespace: string } => ({ group: '', version: 'v1', resource, namespace: 'default' });
const claims = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;

t.test('a projected volume with token, config map, secret and downward API files', async (t) => {
  await client.create(ns('serviceaccounts'), { metadata: { name: 'robot' } });
  await client.create(ns('configmaps'), { metadata: { name: 'cfg' }, data: { 'app.conf': 'x=1', other: 'o' } });
  await client.create(ns('secrets'), { metadata: { name: 'sec' }, data: { password: Buffer.from('hunter2').toString('base64') } });
  await client.create(ns('pods'), {
    metadata: { name: 'proj', labels: { app: 'proj' } },
    spec: {
      nodeName: 'node-v', serviceAccountName: 'robot', terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', volumeMounts: [{ name: 'all', mountPath: '/var/run/all' }] }],
      volumes: [{
        name: 'all',
        projected: {
          defaultMode: 0o440,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 900 } },
            { serviceAccountToken: { path: 'vault-token', audience: 'vault' } },
            { configMap: { name: 'cfg', items: [{ key: 'app.conf', path: 'conf/app.conf', mode: 0o600 }] } },
            { secret: { name: 'sec' } },
            { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
          ],
        },
      }],
    },
  });
  const pod = await waitFor('Running', async () => { const p = await client.get<Pod>(ns('pods'), 'proj'); return p.status?.phase === 'Running' ? p : undefined; });
  const vdir = join(root, 'pods', pod.metadata?.uid ?? '', 'volumes', 'kubernetes.io~projected', 'all');
  t.same((await readdir(vdir)).filter((n) => !n.startsWith('..')).sort(), ['conf', 'name', 'password', 'token', 'vault-token']);
  t.ok((await readdir(vdir)).includes('..data'), 'written with the atomic writer');
  t.equal(await readFile(join(vdir, 'conf', 'app.conf'), 'utf8'), 'x=1');
  t.equal(await readFile(join(vdir, 'password'), 'utf8'), 'hunter2');
  t.equal(await readFile(join(vdir, 'name'), 'utf8'), 'proj');
  t.equal((await stat(join(vdir, 'token'))).mode & 0o777, 0o440, 'defaultMode');
  t.equal((await stat(join(vdir, 'conf', 'app.conf'))).mode & 0o777, 0o600, 'item mode wins');

  const token = await readFile(join(vdir, 'token'), 'utf8');
  const c = claims(token);
  t.equal(c.sub, 'system:serviceaccount:default:robot');
  t.equal((c.exp as number) - (c.iat as number), 900);
  t.same((c['kubernetes.io'] as Record<string, unknown>).pod, { name: 'proj', uid: pod.metadata?.uid }, 'bound to the pod');
  t.same(claims(await readFile(join(vdir, 'vault-token'), 'utf8')).aud, ['vault']);
  const r = await h2request(api.url, { path: '/api/v1/namespaces/default/pods', ca: await readFile(api.caFile), headers: { authorization: `Bearer ${token}` } });
  t.equal(r.status, 200, 'the projected token authenticates at the API server');

  await client.delete(ns('pods'), 'proj');
  await waitFor('pod gone', async () => { try { await client.get(ns('pods'), 'proj'); return false; } catch { return true; } });
  const after = await h2request(api.url, { path: '/api/v1/namespaces/default/pods', ca: await readFile(api.caFile), headers: { authorization: `Bearer ${token}` } });
  t.equal(after.status, 401, 'the pod is gone: its token is revoked');
});

t.test('tokens are refreshed at 80 % of their lifetime; refreshing stops with the volume', async (t) => {
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const asked: TokenRequestSpec[] = [];
  let n = 0;
  const projected = new ProjectedVolumes({
    signal: ac.signal, retryInitialMs: 50,
    requester: async (spec) => {
      asked.push(spec);
      n++;
      const now = Date.now();
      // A 600 ms token: refreshed after about 480 ms.
      return { token: `token-${n}`, issuedAt: now, expiresAt: now + 600 };
    },
  });
  const pod: Pod = { metadata: { name: 'p', namespace: 'ns1', uid: 'uid-1' }, spec: { serviceAccountName: 'sa1', containers: [] } } as unknown as Pod;
  const ctx: VolumeContext = { rootDir: dir, reader: { configMap: async () => undefined, secret: async () => undefined }, log: pino({ level: 'silent' }), podIp: '', hostIp: '' } as unknown as VolumeContext;
  const vdir = join(dir, 'refresh', 'vol');
  await mkdir(vdir, { recursive: true });
  await projected.setUp(pod, { sources: [{ serviceAccountToken: { path: 'token', audience: 'a1', expirationSeconds: 700 } }] }, vdir, ctx);
  t.equal(await readFile(join(vdir, 'token'), 'utf8'), 'token-1');
  t.same(asked[0], { namespace: 'ns1', serviceAccount: 'sa1', audience: 'a1', expirationSeconds: 700, pod: { name: 'p', uid: 'uid-1' } });
  await waitFor('refresh', async () => (await readFile(join(vdir, 'token'), 'utf8')) === 'token-3', 10_000);
  t.equal(projected.refreshing, 1);
  await rm(join(dir, 'refresh'), { recursive: true, force: true });
  await waitFor('refresh stops', () => projected.refreshing === 0, 10_000);
  t.notOk(existsSync(vdir), 'nothing written once the volume is gone');
});
