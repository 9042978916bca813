/**
 * The API server's node-agent client on its own, against small loopback servers standing in for
 * a node: address choice, redirects refused (never followed), only our own headers sent,
 * the header timeout, agent error mapping, and start-up errors for unreadable files.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { createNodeConnection, nodeTarget } from '../../src/daemons/apiserver/proxy/node-connection.js';
import { agentError, agentLogQuery, chooseContainer } from '../../src/daemons/apiserver/proxy/pod-log.js';
import { StartupError } from '../../src/daemons/apiserver/serving-options.js';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';

const node = (addresses: Array<{ type: string; address: string }>, port?: number): KubeObject => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' },
  status: { addresses, ...(port ? { daemonEndpoints: { kubeletEndpoint: { Port: port } } } : {}) },
} as KubeObject);

t.test('nodeTarget follows the preferred address types', async (t) => {
  const n = node([{ type: 'InternalIP', address: '10.0.0.5' }, { type: 'Hostname', address: 'n1' }], 11250);
  t.same(nodeTarget(n, ['Hostname', 'InternalIP']), { host: 'n1', port: 11250 });
  t.same(nodeTarget(n, ['ExternalIP', 'InternalIP']), { host: '10.0.0.5', port: 11250 });
  t.equal(nodeTarget(node([{ type: 'InternalIP', address: '10.0.0.5' }]), ['InternalIP']).port, 10250, 'default port');
  t.throws(() => nodeTarget(n, ['ExternalDNS']), /no preferred addresses found/);
});

t.test('container choice and PodLogOptions', async (t) => {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' }, spec: { containers: [{ name: 'a' }, { name: 'b' }], initContainers: [{ name: 'i' }] } } as KubeObject;
  t.throws(() => chooseContainer(pod, 'x', ''), { message: 'a container name must be specified for pod x, choose one of: [a b] or one of the init containers: [i]' });
  t.equal(chooseContainer(pod, 'x', 'i'), 'i');
  t.throws(() => chooseContainer(pod, 'x', 'y'), { message: 'container y is not valid for pod x' });
  const q = agentLogQuery(new URLSearchParams('follow=true&tailLines=3&timestamps=1&limitBytes=10&container=a&pretty=true'), 'x');
  t.equal(q.query.toString(), 'follow=true&timestamps=true&tailLines=3&limitBytes=10');
  t.equal(q.limitBytes, 10);
  t.throws(() => agentLogQuery(new URLSearchParams('sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z'), 'x'), /at most one of/);
});

const seen: IncomingMessage[] = [];
let redirectTargetHits = 0;
const fakeNode: Server = createServer((req, res) => {
  seen.push(req);
  if (req.url === '/redirect') { res.writeHead(302, { location: '/secret' }); res.end(); return; }
  if (req.url === '/secret') { redirectTargetHits++; res.end('secret'); return; }
  if (req.url === '/hang') return; // never answers
  if (req.url === '/bad') { res.writeHead(400, { 'content-type': 'application/json' }); res.end(JSON.stringify({ kind: 'Status', message: 'container "c" is waiting to start: ContainerCreating' })); return; }
  res.end('ok');
});
await new Promise<void>((r) => fakeNode.listen(0, '127.0.0.1', () => r()));
const port = (fakeNode.address() as AddressInfo).port;
// Loopback stands in for the node here (refusals: node-address-refusal.test.ts).
const conn = createNodeConnection({ https: false, preferredAddressTypes: ['InternalIP'], timeoutMs: 500, allowLoopback: true });
t.teardown(async () => {
  conn.close();
  fakeNode.closeAllConnections();
  await new Promise<void>((r) => fakeNode.close(() => r()));
});
const target = { host: '127.0.0.1', port };

t.test('only our own headers reach the node', async (t) => {
  const r = await conn.get(target, '/healthz', new AbortController().signal);
  r.resume();
  t.equal(r.statusCode, 200);
  const h = seen.at(-1)?.headers ?? {};
  t.notOk(h.authorization);
  t.notOk(h.cookie);
  t.equal(h['user-agent'], 'corectl-apiserver');
});

t.test('a redirect is refused, never followed', async (t) => {
  const r = await conn.get(target, '/redirect', new AbortController().signal);
  t.equal(r.statusCode, 302);
  const err = await agentError(r, 'pods/log', 'p');
  t.equal(err.code, 500);
  t.match(err.message, /redirect/);
  t.equal(redirectTargetHits, 0);
});

t.test('agent errors map to Status errors', async (t) => {
  const r = await conn.get(target, '/bad', new AbortController().signal);
  const err = await agentError(r, 'pods/log', 'p');
  t.equal(err.code, 400);
  t.equal(err.status.reason, 'BadRequest');
  t.equal(err.message, 'container "c" is waiting to start: ContainerCreating');
});

t.test('no answer within the timeout is a 504; a closed port a 503', async (t) => {
  await t.rejects(conn.get(target, '/hang', new AbortController().signal), { code: 504 });
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const freePort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  try {
    await conn.get({ host: '127.0.0.1', port: freePort }, '/healthz', new AbortController().signal);
    t.fail('should reject');
  } catch (e) {
    t.ok(isApiError(e) && e.code === 503 && e.status.reason === 'ServiceUnavailable', 'ServiceUnavailable, as Kubernetes');
    t.match((e as Error).message, /^error trying to reach service: .*ECONNREFUSED/);
  }
});

t.test('unreadable certificate files are start-up errors naming the option', async (t) => {
  const optionOf = (fn: () => unknown): string | undefined => {
    try { fn(); return undefined; } catch (e) { return e instanceof StartupError ? e.option : `not a StartupError: ${(e as Error).message}`; }
  };
  t.equal(optionOf(() => createNodeConnection({ https: true, preferredAddressTypes: [], timeoutMs: 1000, caFile: '/nonexistent/ca.crt' })), '--nodeagent-certificate-authority');
  t.equal(optionOf(() => createNodeConnection({ https: true, preferredAddressTypes: [], timeoutMs: 1000, clientCertFile: '/etc/hostname' })), '--nodeagent-client-key');
});

t.test('HTTPS: the node certificate is verified against the CA unless the caller asks to skip it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-nodeconn-'));
  const trusted = await createCA({ commonName: 'trusted' });
  const other = await createCA({ commonName: 'other' });
  const serving = await issueCert({ ca: other, commonName: 'node', ips: ['127.0.0.1'], usages: 'server' });
  await writePemFile(join(dir, 'ca.crt'), trusted.certPem);
  const server = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => { res.end('ok'); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const c = createNodeConnection({ https: true, preferredAddressTypes: [], timeoutMs: 2000, caFile: join(dir, 'ca.crt'), allowLoopback: true });
  try {
    const tgt = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
    await t.rejects(c.get(tgt, '/healthz', new AbortController().signal), { code: 503 });
    const r = await c.get(tgt, '/healthz', new AbortController().signal, { skipVerify: true });
    r.resume();
    t.equal(r.statusCode, 200);
  } finally {
    c.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  }
});
