// Issue 27, defect 5: the API server never connects to a node agent at a loopback, link-local
// or unspecified address (nor a name resolving to one), whichever path leads there: nodes/proxy,
// pods/log, exec/attach/port-forward. Without this, a Node object naming 127.0.0.1 and the API
// server's own port turned nodes/proxy into the API server talking to itself with its client
// certificate. A node agent that cannot be reached is 503 ServiceUnavailable.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { readFile } from 'node:fs/promises';
import { connect as tlsConnect } from 'node:tls';
import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import { createNodeConnection } from '../../src/daemons/apiserver/proxy/node-connection.js';
import { guardedLookup } from '../../src/daemons/apiserver/proxy/proxyable.js';
import { isLoopbackIp } from '../../src/util/ip.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const REFUSED = ['127.0.0.1', '127.3.4.5', '::1', '::ffff:127.0.0.1', '169.254.10.20', 'fe80::1', '0.0.0.0', '::', 'localhost'];

// A stand-in agent on loopback: whatever reaches it is a hole.
const hits: IncomingMessage[] = [];
const fakeAgent = createServer((req, res) => { hits.push(req); res.end('reached'); });
await new Promise<void>((r) => fakeAgent.listen(0, '127.0.0.1', () => r()));
const agentPort = (fakeAgent.address() as AddressInfo).port;
t.teardown(async () => { fakeAgent.closeAllConnections(); await new Promise<void>((r) => fakeAgent.close(() => r())); });

const api = await startApiserver();
const c = await connectClient(api);
t.teardown(async () => { c.close(); await api.stop(); });
const apiPort = Number(new URL(api.url).port);

t.test('isLoopbackIp', async (t) => {
  for (const ip of ['127.0.0.1', '127.255.0.1', '::1', '::ffff:127.0.0.1']) t.ok(isLoopbackIp(ip), ip);
  for (const ip of ['10.0.0.1', '::', '0.0.0.0', '169.254.1.1', 'fe80::1', 'localhost', '']) t.notOk(isLoopbackIp(ip), ip || '(empty)');
});

t.test('the node connection refuses such addresses before connecting', async (t) => {
  const conn = createNodeConnection({ https: false, preferredAddressTypes: ['InternalIP'], timeoutMs: 2000 });
  t.teardown(() => conn.close());
  for (const host of REFUSED) {
    const target = { host, port: agentPort };
    const e1 = await conn.get(target, '/healthz', new AbortController().signal).then(() => undefined, (e: unknown) => e);
    t.ok(isApiError(e1) && e1.code === 400 && e1.status.reason === 'BadRequest' && e1.message === 'address not allowed', `GET ${host}: ${String(e1)}`);
    const e2 = await conn.upgrade(target, 'GET', '/exec/ns/p/c?output=1', { connection: 'Upgrade', upgrade: 'websocket' }, new AbortController().signal).then(() => undefined, (e: unknown) => e);
    t.ok(isApiError(e2) && e2.code === 400 && e2.message === 'address not allowed', `upgrade ${host}: ${String(e2)}`);
  }
  const e3 = await conn.get({ host: 'no-such-host.invalid', port: agentPort }, '/', new AbortController().signal).then(() => undefined, (e: unknown) => e);
  t.ok(isApiError(e3) && e3.code === 400 && /^lookup no-such-host\.invalid: /.test(e3.message), `unresolvable name: ${String(e3)}`);
  t.equal(hits.length, 0, 'nothing reached the stand-in agent');
});

t.test('the sockets\' own name lookup refuses too (a name that resolves differently the second time)', async (t) => {
  const lookup = (allow: boolean, all: boolean): Promise<unknown> => new Promise((resolve) => {
    guardedLookup(allow)('localhost', { all } as never, (err: Error | null, address?: unknown) => resolve(err ? err : address));
  });
  for (const all of [false, true]) {
    const refused = await lookup(false, all);
    t.ok(refused instanceof Error && (refused as NodeJS.ErrnoException).code === 'EADDRNOTALLOWED' && /address not allowed/.test(refused.message), `all=${all}: ${String(refused)}`);
    const allowed = await lookup(true, all);
    t.notOk(allowed instanceof Error, `all=${all}, loopback allowed: ${JSON.stringify(allowed)}`);
  }
});

t.test('--nodeagent-allow-loopback admits loopback, not link-local or unspecified addresses', async (t) => {
  const conn = createNodeConnection({ https: false, preferredAddressTypes: ['InternalIP'], timeoutMs: 2000, allowLoopback: true });
  t.teardown(() => conn.close());
  for (const host of ['127.0.0.1', 'localhost']) {
    const r = await conn.get({ host, port: agentPort }, '/healthz', new AbortController().signal);
    r.resume();
    t.equal(r.statusCode, 200, host);
  }
  for (const host of ['169.254.10.20', '0.0.0.0', '::']) {
    await t.rejects(conn.get({ host, port: agentPort }, '/healthz', new AbortController().signal), { code: 400, message: 'address not allowed' }, host);
  }
  hits.length = 0;
});


async function nodeAt(name: string, address: string, type: string, port: number): Promise<void> {
  const r = await c.request('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name } } });
  if (r.status !== 201) throw new Error(`create node ${name}: ${r.status} ${r.body.toString()}`);
  const s = await c.request('PATCH', `/api/v1/nodes/${name}/status`, {
    raw: JSON.stringify({ status: { addresses: [{ type, address }], daemonEndpoints: { kubeletEndpoint: { Port: port } } } }),
    contentType: 'application/merge-patch+json',
  });
  if (s.status !== 200) throw new Error(`node status ${name}: ${s.status} ${s.body.toString()}`);
}

async function podOn(name: string, node: string): Promise<void> {
  const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }] } } });
  if (r.status !== 201) throw new Error(`create pod ${name}: ${r.status} ${r.body.toString()}`);
}

t.test('nodes/proxy and pods/log refuse such nodes with 400 "address not allowed"', async (t) => {
  let i = 0;
  for (const address of REFUSED) {
    const n = `bad-${i++}`;
    // The API server's own port: the SSRF the issue found. Its Secrets must stay out of reach.
    await nodeAt(n, address, address === 'localhost' ? 'Hostname' : 'InternalIP', apiPort);
    await podOn(`p-${n}`, n);
    const proxied = await c.request('GET', `/api/v1/nodes/${n}/proxy/api/v1/secrets`);
    t.equal(proxied.status, 400, `nodes/proxy ${address}`);
    t.equal(proxied.json?.reason, 'BadRequest', `nodes/proxy ${address}`);
    t.equal(proxied.json?.message, 'address not allowed', `nodes/proxy ${address}`);
    const log = await c.request('GET', `/api/v1/namespaces/default/pods/p-${n}/log`);
    t.equal(log.status, 400, `pods/log ${address}`);
    t.equal(log.json?.message, 'address not allowed', `pods/log ${address}`);
  }
  // The same through the stand-in agent's port (any loopback service, not only the API server).
  await nodeAt('bad-agent', '127.0.0.1', 'InternalIP', agentPort);
  t.equal((await c.request('GET', '/api/v1/nodes/bad-agent/proxy/healthz')).status, 400);
  t.equal(hits.length, 0, 'nothing reached the stand-in agent');
});

t.test('exec, attach and port-forward to a pod on such a node are refused before any connection', async (t) => {
  await nodeAt('bad-stream', '127.0.0.1', 'InternalIP', agentPort);
  await podOn('p-stream', 'bad-stream');
  const tls = { ca: await readFile(api.caFile), cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };
  for (const sub of ['exec?command=id&stdout=true', 'attach?stdout=true', 'portforward?ports=80']) {
    const answer = await new Promise<string>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port: apiPort, ...tls, ALPNProtocols: ['http/1.1'], servername: 'localhost' });
      let text = '';
      s.on('secureConnect', () => s.write([
        `GET /api/v1/namespaces/default/pods/p-stream/${sub} HTTP/1.1`, 'Host: localhost', 'Connection: Upgrade', 'Upgrade: websocket',
        'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io', '', ''].join('\r\n')));
      s.on('data', (d: Buffer) => { text += d.toString(); });
      s.on('error', () => undefined);
      s.on('close', () => resolve(text));
      setTimeout(() => s.destroy(), 5000);
    });
    t.match(answer, /^HTTP\/1\.1 400/, sub);
    t.match(answer, /address not allowed/, sub);
  }
  t.equal(hits.length, 0, 'nothing reached the stand-in agent');
});

const external = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
t.test('a node agent that cannot be reached is 503 ServiceUnavailable', { skip: external ? false : 'no non-loopback IPv4 address on this host' }, async (t) => {
  // A closed port on this host's own (global unicast) address: connection refused.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, external, () => r()));
  const closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  await nodeAt('gone', external!, 'InternalIP', closedPort);
  await podOn('p-gone', 'gone');
  const proxied = await c.request('GET', '/api/v1/nodes/gone/proxy/healthz');
  t.equal(proxied.status, 503);
  t.equal(proxied.json?.reason, 'ServiceUnavailable');
  t.match(proxied.json?.message, /^error trying to reach service: .*ECONNREFUSED/);
  const log = await c.request('GET', '/api/v1/namespaces/default/pods/p-gone/log');
  t.equal(log.status, 503);
  t.equal(log.json?.reason, 'ServiceUnavailable');
});
