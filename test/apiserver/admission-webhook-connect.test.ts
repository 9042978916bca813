/**
 * Admission webhooks on CONNECT requests, as Kubernetes sends them: operation CONNECT, the
 * connect options (PodExecOptions, PodAttachOptions, NodeProxyOptions ...) as the object, no
 * options. A validating webhook denying CONNECT on pods/exec refuses an exec before the node
 * agent (a stand-in here) is contacted; one whose rules do not take the request (attach) lets
 * it through; a mutating webhook's patch changes the command the agent is asked to run.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import t, { type Test } from 'tap';
import { webhookConfigSource } from '../../src/daemons/apiserver/admission/webhook/config-source.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';
import { tlsWebhookServer, jsonPatchAnswer, type TlsWebhookServer } from '../helpers/webhook-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Obj = Record<string, unknown>;
const GROUP_PATH = '/apis/admissionregistration.k8s.io/v1';

// The stand-in node agent: records what reaches it, switches protocols for upgrades.
const agentSaw: string[] = [];
const agent = createServer((req: IncomingMessage, res) => { agentSaw.push(req.url ?? ''); res.writeHead(200, { 'content-type': 'text/plain' }); res.end('agent'); });
agent.on('upgrade', (req: IncomingMessage, socket) => {
  agentSaw.push(req.url ?? '');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n');
  setTimeout(() => socket.end(), 50);
});
await new Promise<void>((r) => agent.listen(0, '127.0.0.1', r));
const agentPort = (agent.address() as { port: number }).port;

let a: StartedApiserver;
let c: RestClient;
let hooks: TlsWebhookServer;
let tls: { ca: Buffer; cert: Buffer; key: Buffer };

t.before(async () => {
  hooks = await tlsWebhookServer();
  a = await startApiserver({ args: ['--nodeagent-https=false', '--nodeagent-preferred-address-types=InternalIP', '--nodeagent-allow-loopback=true'] });
  c = await connectClient(a);
  tls = { ca: await readFile(a.caFile), cert: await readFile(a.clientCertFile), key: await readFile(a.clientKeyFile) };
  const node = await c.request('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } } });
  if (node.status !== 201) throw new Error(`node: ${node.status} ${node.body.toString()}`);
  const st = await c.request('PATCH', '/api/v1/nodes/n1/status', {
    contentType: 'application/merge-patch+json',
    body: { status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: agentPort } } } },
  });
  if (st.status !== 200) throw new Error(`node status: ${st.status} ${st.body.toString()}`);
  const pod = await c.request('POST', '/api/v1/namespaces/default/pods', { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { nodeName: 'n1', containers: [{ name: 'a', image: 'x' }] } } });
  if (pod.status !== 201) throw new Error(`pod: ${pod.status} ${pod.body.toString()}`);
});
t.teardown(async () => { c?.close(); await a?.stop(); await hooks?.close(); agent.close(); agent.closeAllConnections(); });

type Flavor = 'mutating' | 'validating';
async function configure(t: Test, flavor: Flavor, name: string, path: string, resources: string[], operations: string[]): Promise<void> {
  const kind = flavor === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration';
  const body = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name },
    webhooks: [{ name: `${name}.example.com`, clientConfig: { url: hooks.url(path), caBundle: hooks.caBundle }, rules: [{ operations, apiGroups: [''], apiVersions: ['v1'], resources }], sideEffects: 'None', admissionReviewVersions: ['v1'] }],
  };
  const r = await c.request('POST', `${GROUP_PATH}/${flavor}webhookconfigurations`, { body });
  if (r.status !== 201) throw new Error(`${name}: ${r.status} ${r.body.toString()}`);
  const rv = (r.json as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  await waitFor(`${name} in effect`, () => webhookConfigSource(a.parts!.store, flavor).has(name, rv));
  t.teardown(async () => {
    await c.request('DELETE', `${GROUP_PATH}/${flavor}webhookconfigurations/${name}`);
    await waitFor(`${name} gone`, () => !webhookConfigSource(a.parts!.store, flavor).has(name));
  });
}

/** A raw WebSocket upgrade over HTTP/1.1 (as kubectl exec makes it); resolves with what the server sent. */
function upgrade(path: string): Promise<string> {
  return new Promise<string>((resolve) => {
    const s = connect({ host: '127.0.0.1', port: a.port, ...tls, ALPNProtocols: ['http/1.1'], servername: 'localhost' });
    let buf = '';
    s.on('secureConnect', () => s.write([
      `GET ${path} HTTP/1.1`, 'Host: localhost', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io', '', '',
    ].join('\r\n')));
    s.on('data', (d: Buffer) => { buf += d.toString(); });
    s.on('error', () => undefined);
    s.on('close', () => resolve(buf));
    setTimeout(() => s.destroy(), 5000);
  });
}

t.test('a validating webhook denying CONNECT on pods/exec refuses the exec before the node is contacted', async (t) => {
  await configure(t, 'validating', 'deny-exec', '/deny-exec', ['pods/exec'], ['CONNECT']);
  hooks.answers.set('/deny-exec', () => ({ allowed: false, status: { code: 403, reason: 'Forbidden', message: 'no exec here' } }));
  const before = agentSaw.length;
  const from = hooks.reviews.length;
  const head = await upgrade('/api/v1/namespaces/default/pods/p/exec?command=ls&command=-l&stdout=true&stderr=true&container=a');
  t.match(head, /^HTTP\/1\.1 403 /);
  t.match(head, 'admission webhook \\"deny-exec.example.com\\" denied the request: no exec here');
  t.equal(agentSaw.length, before, 'the node agent was never asked');
  const review = hooks.reviews.slice(from).find((r) => r.path.startsWith('/deny-exec?'))?.request;
  t.ok(review, 'the webhook was called');
  t.match(review, {
    kind: { group: '', version: 'v1', kind: 'PodExecOptions' }, resource: { group: '', version: 'v1', resource: 'pods' }, subResource: 'exec',
    requestKind: { group: '', version: 'v1', kind: 'PodExecOptions' }, requestSubResource: 'exec',
    name: 'p', namespace: 'default', operation: 'CONNECT', oldObject: null, options: null, dryRun: false,
    userInfo: { username: 'admin' },
  });
  t.same(review.object, { kind: 'PodExecOptions', apiVersion: 'v1', stdout: true, stderr: true, container: 'a', command: ['ls', '-l'] }, 'the exec options as the object');

  // The rule names pods/exec only: an attach goes through to the node.
  const attach = await upgrade('/api/v1/namespaces/default/pods/p/attach?stdout=true&container=a');
  t.match(attach, /^HTTP\/1\.1 101 /);
  t.match(agentSaw.at(-1), /^\/attach\/default\/p\/a\?/);
});

t.test('CONNECT is not among a rule\'s operations: the exec is not sent to the webhook', async (t) => {
  await configure(t, 'validating', 'deny-create', '/deny-create', ['pods/exec'], ['CREATE']);
  hooks.answers.set('/deny-create', () => ({ allowed: false }));
  const from = hooks.reviews.length;
  t.match(await upgrade('/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true'), /^HTTP\/1\.1 101 /);
  t.notOk(hooks.reviews.slice(from).some((r) => r.path.startsWith('/deny-create?')), 'not called');
});

t.test("a mutating webhook's patch changes the command the node agent runs", async (t) => {
  await configure(t, 'mutating', 'rewrite-exec', '/rewrite-exec', ['pods/*'], ['*']);
  hooks.answers.set('/rewrite-exec', (r: { operation: string }) => (r.operation === 'CONNECT' ? jsonPatchAnswer([{ op: 'replace', path: '/command', value: ['echo', 'patched'] }]) : { allowed: true }));
  t.match(await upgrade('/api/v1/namespaces/default/pods/p/exec?command=rm&command=-rf&stdout=true'), /^HTTP\/1\.1 101 /);
  t.equal(agentSaw.at(-1), '/exec/default/p/a?command=echo&command=patched&output=1');
});

t.test('proxies are CONNECT too: nodes/proxy with NodeProxyOptions and its path', async (t) => {
  await configure(t, 'validating', 'deny-proxy', '/deny-proxy', ['nodes/proxy'], ['CONNECT']);
  hooks.answers.set('/deny-proxy', () => ({ allowed: false, status: { message: 'no proxy' } }));
  const before = agentSaw.length;
  const from = hooks.reviews.length;
  const r = await c.request('GET', '/api/v1/nodes/n1/proxy/pods');
  t.equal(r.status, 400, r.body.toString());
  t.match(r.body.toString(), 'admission webhook \\"deny-proxy.example.com\\" denied the request: no proxy');
  t.equal(agentSaw.length, before, 'the node agent was never asked');
  const review = hooks.reviews.slice(from).find((x) => x.path.startsWith('/deny-proxy?'))?.request;
  t.match(review, { operation: 'CONNECT', kind: { kind: 'NodeProxyOptions' }, resource: { resource: 'nodes' }, subResource: 'proxy', name: 'n1' });
  t.same(review?.object, { kind: 'NodeProxyOptions', apiVersion: 'v1', path: 'pods' });
  hooks.answers.set('/deny-proxy', () => ({ allowed: true }));
  t.equal((await c.request('GET', '/api/v1/nodes/n1/proxy/pods')).status, 200, 'allowed: proxied');
  t.equal(agentSaw.at(-1), '/pods');
});
