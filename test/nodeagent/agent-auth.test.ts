/**
 * The node agent's secure port with --authentication-token-webhook and
 * --authorization-mode=Webhook against a real API server (AlwaysDeny there, so only
 * system:masters passes its SubjectAccessReview): 401 without credentials or with a bad token,
 * client certificates and service-account tokens (TokenReview) authenticate, the kubelet's
 * attribute mapping and 403 wording, and the answer caches (with a counting client and a fake
 * clock).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { UserInfo } from '../../src/auth/user.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import { WebhookTokenAuthenticator } from '../../src/daemons/nodeagent/server/agent-authn.js';
import { agentRequestAttributes, WebhookAuthorizer } from '../../src/daemons/nodeagent/server/agent-authz.js';
import { startApiserver } from '../helpers/apiserver.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-agentauth-'));
const keyFile = join(dir, 'sa.key');
await writeFile(keyFile, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
const api = await startApiserver({ args: ['--authorization-mode=AlwaysDeny', '--feature-gates=TokenRequest=true', `--service-account-signing-key-file=${keyFile}`] });
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const agents: NodeAgent[] = [];
t.teardown(async () => {
  for (const a of agents) await a.stop({ stopPods: true }).catch(() => undefined);
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

async function agent(name: string, extra: string[]): Promise<NodeAgent> {
  const root = join(dir, name);
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, `--hostname-override=${name}`, `--root-dir=${root}`,
    `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
    '--address=127.0.0.1', '--resolv-conf=', '--event-qps=0', '--register-node=false', `--client-ca-file=${api.caFile}`, '--anonymous-auth=false', ...extra,
  ]);
  const a = await startNodeAgent(config, { podLogDir: join(root, 'logs'), skipProcessTweaks: true });
  agents.push(a);
  return a;
}

interface Reply { status: number; message: string }
function get(a: NodeAgent, path: string, o: { cert?: { certPem: string; keyPem: string }; token?: string; method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`https://127.0.0.1:${a.listeners?.securePort}${path}`, {
      method: o.method ?? 'GET',
      agent: new Agent({ rejectUnauthorized: false, ...(o.cert ? { cert: o.cert.certPem, key: o.cert.keyPem } : {}) }),
      headers: { ...(o.token ? { authorization: `Bearer ${o.token}` } : {}), ...(o.headers ?? {}) },
    }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => {
        let message = body;
        try { message = (JSON.parse(body) as { message?: string }).message ?? body; } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, message });
      });
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

const SA = { group: '', version: 'v1', resource: 'serviceaccounts', namespace: 'default' };
await client.create(SA, { metadata: { name: 'robot' } });
const tr = await client.create<KubeObject & { status?: { token?: string } }>(SA, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} }, { name: 'robot', subresource: 'token' });
const saToken = tr.status?.token ?? '';
const masters = await api.issueClient('apiserver-client', ['system:masters']);
const ops = await api.issueClient('someone', ['ops']);

const webhook = await agent('node-w', ['--authentication-token-webhook', '--authorization-mode=Webhook',
  '--authorization-webhook-cache-authorized-ttl=1s', '--authorization-webhook-cache-unauthorized-ttl=1s', '--authentication-token-webhook-cache-ttl=1s']);

t.test('webhook mode: authentication', async (t) => {
  t.equal((await get(webhook, '/pods')).status, 401, 'no credentials, anonymous off');
  t.same(await get(webhook, '/pods', { token: 'not-a-token' }), { status: 401, message: 'Unauthorized' }, 'a token the API server rejects');
  t.equal((await get(webhook, '/healthz')).status, 200, 'health needs no credentials');
});

t.test('webhook mode: authorization by SubjectAccessReview', async (t) => {
  t.equal((await get(webhook, '/pods', { cert: masters })).status, 200, 'system:masters (the API server\'s client identity) is allowed');
  t.equal((await get(webhook, '/stats/summary', { cert: masters })).status, 200);
  t.same(await get(webhook, '/pods', { cert: ops }), { status: 403, message: 'Forbidden (user=someone, verb=get, resource=nodes, subresource=proxy)' });
  t.same(await get(webhook, '/stats/summary', { cert: ops }), { status: 403, message: 'Forbidden (user=someone, verb=get, resource=nodes, subresource=stats)' });
  t.same(await get(webhook, '/metrics', { cert: ops }), { status: 403, message: 'Forbidden (user=someone, verb=get, resource=nodes, subresource=metrics)' });
  t.same(await get(webhook, '/metrics/resource', { cert: ops }), { status: 403, message: 'Forbidden (user=someone, verb=get, resource=nodes, subresource=metrics)' });
  t.same(await get(webhook, '/metrics/cadvisor', { cert: ops }), { status: 403, message: 'Forbidden (user=someone, verb=get, resource=nodes, subresource=metrics)' });
  t.equal((await get(webhook, '/metrics/resource', { cert: masters })).status, 200);
  t.same(await get(webhook, '/manifests', { cert: ops, method: 'POST' }), { status: 403, message: 'Forbidden (user=someone, verb=create, resource=nodes, subresource=proxy)' });
  t.same(await get(webhook, '/pods', { token: saToken }), { status: 403, message: 'Forbidden (user=system:serviceaccount:default:robot, verb=get, resource=nodes, subresource=proxy)' },
    'a service-account token authenticates through TokenReview, then is denied');
});

t.test('token webhook with AlwaysAllow authorization', async (t) => {
  const open = await agent('node-o', ['--authentication-token-webhook']);
  t.equal((await get(open, '/pods', { token: saToken })).status, 200);
  t.equal((await get(open, '/pods', { cert: ops })).status, 200);
  t.equal((await get(open, '/pods', { token: 'bogus' })).status, 401);
});

t.test('reference defaults (anonymous, AlwaysAllow): anonymous callers cannot start pods or run commands (issue 27)', async (t) => {
  const manifest = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: pushed\nspec:\n  containers:\n  - name: c\n    image: localhost/busybox:latest\n';
  const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
  const started: Record<string, NodeAgent> = {};
  for (const [name, extra] of [['node-d', []], ['node-m', ['--enable-manifest-api=true']]] as const) {
    const a = await agent(name, ['--anonymous-auth=true', ...extra]);
    started[name] = a;
    t.equal((await get(a, '/pods')).status, 200, `${name}: anonymous reads stay as the kubelet's (AlwaysAllow)`);
    t.same(await get(a, '/manifests', { method: 'POST', body: manifest }), { status: 401, message: 'Unauthorized' }, `${name}: anonymous POST /manifests`);
    t.same(await get(a, '/manifests'), { status: 401, message: 'Unauthorized' }, `${name}: anonymous GET /manifests`);
    t.same(await get(a, '/manifests/default/pushed', { method: 'DELETE' }), { status: 401, message: 'Unauthorized' }, `${name}: anonymous DELETE /manifests`);
    t.same(await get(a, '/run/default/p/c?cmd=id', { method: 'POST' }), { status: 401, message: 'Unauthorized' }, `${name}: anonymous POST /run`);
    for (const path of ['/exec/default/p/c?command=id&output=1', '/attach/default/p/c?output=1', '/portForward/default/p?port=80']) {
      t.same(await get(a, path, { method: 'POST', headers: upgrade }), { status: 401, message: 'Unauthorized' }, `${name}: anonymous upgrade ${path.split('?')[0]}`);
    }
  }
  const off = started['node-d']!;
  const on = started['node-m']!;
  t.same(await get(off, '/manifests', { cert: ops, method: 'POST', body: manifest }), { status: 404, message: 'the manifest API is off (--enable-manifest-api=false)' }, 'off by default');
  const created = await get(on, '/manifests', { cert: ops, method: 'POST', body: manifest });
  t.equal(created.status, 201, '--enable-manifest-api: an authenticated, authorized caller submits pods');
  t.equal((await get(on, '/manifests/default/pushed', { cert: ops, method: 'DELETE' })).status, 200);
  t.equal((await get(on, '/run/default/nobody/c?cmd=id', { cert: ops, method: 'POST' })).status, 404, '/run with credentials reaches the handler');
});

t.test('a webhook needs the API server', async (t) => {
  const { config } = parseNodeagentArgs(['--container-runtime=fake', `--coreconfig=${join(dir, 'missing')}`, '--hostname-override=x', `--root-dir=${join(dir, 'x')}`,
    `--cert-dir=${join(dir, 'x', 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--resolv-conf=', '--authorization-mode=Webhook']);
  await t.rejects(startNodeAgent(config, { skipProcessTweaks: true, podLogDir: join(dir, 'x', 'logs') }), /--authorization-mode=Webhook needs the API server/);
});

t.test('kubelet attribute mapping', async (t) => {
  const u: UserInfo = { name: 'u', groups: [] };
  const m = (method: string, path: string): string => { const a = agentRequestAttributes(u, method, path, 'n1'); return `${a.verb} ${a.resource}/${a.subresource} ${a.name}`; };
  t.equal(m('GET', '/stats/summary'), 'get nodes/stats n1');
  t.equal(m('HEAD', '/stats'), 'get nodes/stats n1');
  t.equal(m('GET', '/metrics'), 'get nodes/metrics n1');
  t.equal(m('GET', '/metrics/cadvisor'), 'get nodes/metrics n1');
  t.equal(m('GET', '/logs/syslog'), 'get nodes/log n1');
  t.equal(m('GET', '/spec/'), 'get nodes/spec n1');
  t.equal(m('GET', '/statsx'), 'get nodes/proxy n1', 'prefix must end at a path segment');
  t.equal(m('POST', '/exec/ns/p/c'), 'create nodes/proxy n1');
  t.equal(m('PUT', '/pods'), 'update nodes/proxy n1');
  t.equal(m('PATCH', '/pods'), 'patch nodes/proxy n1');
  t.equal(m('DELETE', '/manifests/ns/p'), 'delete nodes/proxy n1');
  t.equal(m('GET', '/containerLogs/ns/p/c'), 'get nodes/proxy n1');
});

t.test('answer caches follow their TTLs; errors are not cached', async (t) => {
  let now = 1_000_000;
  let calls = 0;
  let fail = false;
  const reviews = new WebhookTokenAuthenticator({
    cacheTtlMs: 120_000, now: () => now,
    create: async <T extends KubeObject>(_r: unknown, obj: KubeObject): Promise<T> => {
      calls++;
      if (fail) throw new Error('unreachable');
      const token = (obj as { spec: { token: string } }).spec.token;
      return { status: token === 'good' ? { authenticated: true, user: { username: 'alice', groups: ['g'] } } : { authenticated: false } } as unknown as T;
    },
  });
  const [a, b] = await Promise.all([reviews.authenticateToken('good'), reviews.authenticateToken('good')]);
  t.same(a, { name: 'alice', groups: ['g'] });
  t.same(b, a);
  t.equal(calls, 1, 'concurrent lookups share one TokenReview');
  t.equal(await reviews.authenticateToken('bad'), undefined);
  await reviews.authenticateToken('bad');
  t.equal(calls, 2, 'unauthenticated answers are cached too');
  now += 119_000;
  await reviews.authenticateToken('good');
  t.equal(calls, 2, 'still cached inside the TTL');
  now += 2_000;
  fail = true;
  await t.rejects(reviews.authenticateToken('good'));
  fail = false;
  t.same(await reviews.authenticateToken('good'), { name: 'alice', groups: ['g'] });
  t.equal(calls, 4, 'expired, an error is not cached, then asked again');

  let sar = 0;
  const authz = new WebhookAuthorizer({
    authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000, now: () => now,
    create: async <T extends KubeObject>(_r: unknown, obj: KubeObject): Promise<T> => {
      sar++;
      const spec = (obj as { spec: { user: string } }).spec;
      return { status: { allowed: spec.user === 'admin' } } as unknown as T;
    },
  });
  const attrs = (name: string): ReturnType<typeof agentRequestAttributes> => agentRequestAttributes({ name, groups: [] }, 'GET', '/pods', 'n1');
  t.equal((await authz.authorize(attrs('admin'))).decision, 'allow');
  t.equal((await authz.authorize(attrs('eve'))).decision, 'deny');
  now += 31_000;
  await authz.authorize(attrs('admin'));
  await authz.authorize(attrs('eve'));
  t.equal(sar, 3, 'the denial expired after 30 s, the allowance did not');
});
