// Audit events of a full API server (log backend, json format, blocking mode): the exact events
// of a create at each level, a denied request, a watch (ResponseStarted), an exec through a
// stand-in node agent, omitStages, omitManagedFields, impersonation, the Audit-Id header; a
// Secret's data shows at Request level but a bearer token never does.
import { createServer, type IncomingMessage } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { encodeProtobuf } from '../../src/api/codec/protobuf.js';
import { h2request, startApiserver, type TestRequest } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const dir = await mkdtemp(join(tmpdir(), 'audit-'));
const policyFile = join(dir, 'policy.yaml');
const logFile = join(dir, 'audit.log');
const tokenFile = join(dir, 'tokens.csv');
const abacFile = join(dir, 'abac.jsonl');
const TOKEN = 'tok-s3cr3t-value-1234';
await writeFile(tokenFile, `${TOKEN},tina,u-tina,readers\n`);
const abac = (spec: Record<string, unknown>): string => JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec });
await writeFile(abacFile, [
  abac({ group: 'system:masters', namespace: '*', resource: '*', apiGroup: '*', nonResourcePath: '*' }),
  abac({ user: 'tina', namespace: 'meta', resource: '*', apiGroup: '*' }),
  abac({ user: 'tina', namespace: 'req', resource: '*', apiGroup: '*' }),
  abac({ user: 'tina', namespace: '*', resource: 'users', apiGroup: '' }),
  abac({ user: 'dave', namespace: 'meta', resource: 'configmaps', apiGroup: '' }),
  '',
].join('\n'));
await writeFile(policyFile, [
  'apiVersion: audit.k8s.io/v1',
  'kind: Policy',
  'rules:',
  '- level: None',
  '  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]',
  '- level: None',
  '  users: ["system:apiserver"]',
  '- level: RequestResponse',
  '  namespaces: ["rr"]',
  '- level: RequestResponse',
  '  namespaces: ["rrmf"]',
  '  omitManagedFields: true',
  '  omitStages: [RequestReceived]',
  '- level: Request',
  '  namespaces: ["req"]',
  '  omitStages: [RequestReceived]',
  '- level: Metadata',
  '  resources: [{ group: "", resources: ["pods/exec", "pods"] }]',
  '- level: Metadata',
  '  verbs: ["watch"]',
  '- level: Metadata',
  '  omitStages: [RequestReceived]',
  '',
].join('\n'));

const seen: IncomingMessage[] = [];
const agent = createServer((req, res) => { seen.push(req); res.writeHead(404); res.end(); });
agent.on('upgrade', (req: IncomingMessage, socket) => {
  seen.push(req);
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n');
  setTimeout(() => socket.end(), 100);
});
await new Promise<void>((r) => agent.listen(0, '127.0.0.1', r));
const agentPort = (agent.address() as { port: number }).port;

const api = await startApiserver({
  args: [
    `--audit-policy-file=${policyFile}`, `--audit-log-path=${logFile}`, `--token-auth-file=${tokenFile}`,
    '--authorization-mode=ABAC', `--authorization-policy-file=${abacFile}`,
    '--nodeagent-https=false', '--nodeagent-preferred-address-types=InternalIP', '--nodeagent-allow-loopback=true',
  ],
});
t.teardown(async () => { await api.stop(); agent.close(); agent.closeAllConnections(); await rm(dir, { recursive: true, force: true }); });

const admin = { ca: await readFile(api.caFile), cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };
const req = (r: TestRequest) => h2request(api.url, { ...admin, ...r });
const asTina = (r: TestRequest) => h2request(api.url, { ca: admin.ca, ...r, headers: { authorization: `Bearer ${TOKEN}`, ...(r.headers ?? {}) } });
const post = (path: string, obj: unknown, as = req) => as({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(obj) });

async function events(): Promise<Any[]> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
async function eventsOf(id: string, count: number): Promise<Any[]> {
  return waitFor(`${count} events of ${id}`, async () => { const e = (await events()).filter((x) => x.auditID === id); return e.length >= count ? e : undefined; });
}
/** What varies from run to run, made comparable. */
function plain(ev: Any): Any {
  const o = { ...ev };
  t.match(o.requestReceivedTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  t.match(o.stageTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  t.ok(o.stageTimestamp >= o.requestReceivedTimestamp, 'stage after receipt');
  t.same(o.sourceIPs, ['127.0.0.1']);
  delete o.requestReceivedTimestamp; delete o.stageTimestamp; delete o.sourceIPs; delete o.auditID; delete o.userAgent;
  if (o.responseObject?.metadata) {
    for (const k of ['uid', 'resourceVersion', 'creationTimestamp']) delete o.responseObject.metadata[k];
    if (o.responseObject.metadata.managedFields) o.responseObject.metadata.managedFields = '<present>';
  }
  return o;
}

const ADMIN_USER = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
const cm = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { k: 'v' } });

for (const ns of ['rr', 'rrmf', 'req', 'meta']) {
  const r = await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  if (r.status !== 201) throw new Error(`namespace ${ns}: ${r.status} ${r.body}`);
}

t.test('every answer carries Audit-Id; a client-given Audit-ID is kept', async (t) => {
  const r = await req({ path: '/healthz' });
  t.match(r.headers['audit-id'], /^[0-9a-f-]{36}$/);
  const unauth = await h2request(api.url, { ca: admin.ca, path: '/api/v1/pods', headers: { authorization: 'Bearer nope' } });
  t.equal(unauth.status, 401);
  t.match(unauth.headers['audit-id'], /^[0-9a-f-]{36}$/, 'a 401 too');
  // A refused authentication is one ResponseStarted event without a user (Kubernetes' failed-authentication audit).
  const [failed, ...more] = await eventsOf(unauth.headers['audit-id'] as string, 1);
  t.same(plain(failed), {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Metadata', stage: 'ResponseStarted', requestURI: '/api/v1/pods', verb: 'list', user: {},
    objectRef: { resource: 'pods', apiVersion: 'v1' }, responseStatus: { metadata: {}, message: 'Authentication failed, attempted: bearer', code: 401 },
  });
  t.equal(more.length, 0, 'only that event');
  const given = await req({ path: '/api/v1/namespaces/meta/configmaps', headers: { 'audit-id': 'my-own-id' } });
  t.equal(given.headers['audit-id'], 'my-own-id');
  const ev = await eventsOf('my-own-id', 1);
  t.equal(ev[0].verb, 'list');
  t.notOk((await events()).some((e) => e.requestURI === '/healthz'), 'level None is not logged');
});

t.test('a create at RequestResponse: both stages, both objects', async (t) => {
  const r = await post('/api/v1/namespaces/rr/configmaps?fieldManager=me', cm('rr', 'c1'));
  t.equal(r.status, 201);
  const id = r.headers['audit-id'] as string;
  const [received, complete] = await eventsOf(id, 2);
  t.same(plain(received), {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'RequestResponse', stage: 'RequestReceived',
    requestURI: '/api/v1/namespaces/rr/configmaps?fieldManager=me', verb: 'create', user: ADMIN_USER,
    objectRef: { resource: 'configmaps', namespace: 'rr', apiVersion: 'v1' },
  });
  t.same(plain(complete), {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'RequestResponse', stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/rr/configmaps?fieldManager=me', verb: 'create', user: ADMIN_USER,
    objectRef: { resource: 'configmaps', namespace: 'rr', name: 'c1', apiVersion: 'v1' },
    responseStatus: { metadata: {}, code: 201 },
    requestObject: cm('rr', 'c1'),
    responseObject: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'c1', namespace: 'rr', managedFields: '<present>' }, data: { k: 'v' } },
    annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
  });
});

t.test('omitManagedFields drops managedFields from the logged objects', async (t) => {
  const r = await post('/api/v1/namespaces/rrmf/configmaps?fieldManager=me', cm('rrmf', 'c1'));
  const [complete] = await eventsOf(r.headers['audit-id'] as string, 1);
  t.equal(complete.stage, 'ResponseComplete', 'RequestReceived omitted by the policy');
  t.notOk('managedFields' in complete.responseObject.metadata);
  t.equal(complete.responseObject.metadata.name, 'c1');
});

t.test('a create at Request level and at Metadata level', async (t) => {
  const r1 = await post('/api/v1/namespaces/req/configmaps', cm('req', 'c1'));
  const [c1] = await eventsOf(r1.headers['audit-id'] as string, 1);
  t.same(plain(c1), {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Request', stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/req/configmaps', verb: 'create', user: ADMIN_USER,
    objectRef: { resource: 'configmaps', namespace: 'req', name: 'c1', apiVersion: 'v1' },
    responseStatus: { metadata: {}, code: 201 },
    requestObject: cm('req', 'c1'),
    annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
  });
  const r2 = await post('/api/v1/namespaces/meta/configmaps?fieldManager=me', cm('meta', 'c1'));
  const [c2] = await eventsOf(r2.headers['audit-id'] as string, 1);
  t.same(plain(c2), {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Metadata', stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/meta/configmaps?fieldManager=me', verb: 'create', user: ADMIN_USER,
    objectRef: { resource: 'configmaps', namespace: 'meta', name: 'c1', apiVersion: 'v1' },
    responseStatus: { metadata: {}, code: 201 },
    annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
  });
});

// Kubernetes logs the decoded object whatever the body's encoding.
t.test('a body in YAML or protobuf: the decoded object is the requestObject', async (t) => {
  const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  namespace: req\ndata:\n  k: v\n';
  const r1 = await req({ path: '/api/v1/namespaces/req/configmaps', method: 'POST', headers: { 'content-type': 'application/yaml' }, body: yaml });
  t.equal(r1.status, 201, r1.body);
  const [y] = await eventsOf(r1.headers['audit-id'] as string, 1);
  t.same(y.requestObject, cm('req', 'from-yaml'), 'YAML');
  t.same(y.objectRef, { resource: 'configmaps', namespace: 'req', name: 'from-yaml', apiVersion: 'v1' });
  const pb = encodeProtobuf(cm('req', 'from-pb') as Any);
  const r2 = await req({ path: '/api/v1/namespaces/req/configmaps', method: 'POST', headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' }, body: pb });
  t.equal(r2.status, 201, r2.body);
  const [p] = await eventsOf(r2.headers['audit-id'] as string, 1);
  t.same(p.requestObject, cm('req', 'from-pb'), 'protobuf');
  // An apply patch in YAML is logged as the patch object (the body, decoded).
  const apply = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: req\ndata:\n  a: b\n';
  const r3 = await req({ path: '/api/v1/namespaces/req/configmaps/applied?fieldManager=me', method: 'PATCH', headers: { 'content-type': 'application/apply-patch+yaml' }, body: apply });
  t.equal(r3.status, 201, r3.body);
  const [a] = await eventsOf(r3.headers['audit-id'] as string, 1);
  t.same(a.requestObject, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', namespace: 'req' }, data: { a: 'b' } }, 'an apply patch in YAML');
});

t.test('a denied request: the Status and the decision', async (t) => {
  const r = await asTina({ path: '/api/v1/namespaces/rr/secrets' });
  t.equal(r.status, 403);
  const [c] = await eventsOf(r.headers['audit-id'] as string, 2);
  const all = await eventsOf(r.headers['audit-id'] as string, 2);
  t.same(all.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
  t.same(plain(all[1]), {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'RequestResponse', stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/rr/secrets', verb: 'list', user: { username: 'tina', uid: 'u-tina', groups: ['readers', 'system:authenticated'] },
    objectRef: { resource: 'secrets', namespace: 'rr', apiVersion: 'v1' },
    responseStatus: {
      metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
      message: 'secrets is forbidden: User "tina" cannot list resource "secrets" in API group "" in the namespace "rr": No policy matched.',
      details: JSON.parse(r.body).details,
    },
    responseObject: JSON.parse(r.body),
    annotations: { 'authorization.k8s.io/decision': 'forbid', 'authorization.k8s.io/reason': 'No policy matched.' },
  });
  t.ok(c);
});

t.test('impersonation: user is the authenticated one, impersonatedUser the other', async (t) => {
  const r = await asTina({ path: '/api/v1/namespaces/meta/configmaps/c1', headers: { 'impersonate-user': 'dave' } });
  t.equal(r.status, 200);
  const [c] = await eventsOf(r.headers['audit-id'] as string, 1);
  t.same(c.user, { username: 'tina', uid: 'u-tina', groups: ['readers', 'system:authenticated'] });
  t.same(c.impersonatedUser, { username: 'dave', groups: ['system:authenticated'] });
  t.same(c.objectRef, { resource: 'configmaps', namespace: 'meta', name: 'c1', apiVersion: 'v1' });
});

t.test('a Secret at Request level shows its data; the bearer token never appears', async (t) => {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' }, data: { password: Buffer.from('hunter2').toString('base64') } };
  const r = await post('/api/v1/namespaces/req/secrets', secret, asTina);
  t.equal(r.status, 201, r.body);
  const [c] = await eventsOf(r.headers['audit-id'] as string, 1);
  t.same(c.requestObject.data, secret.data, 'as in Kubernetes, the data is logged at Request level');
  t.notOk((await readFile(logFile, 'utf8')).includes(TOKEN), 'no token in the audit log');
});

t.test('a watch: RequestReceived, ResponseStarted, ResponseComplete', async (t) => {
  const r = await req({ path: '/api/v1/namespaces/meta/configmaps?watch=1&timeoutSeconds=1' });
  t.equal(r.status, 200);
  const all = await eventsOf(r.headers['audit-id'] as string, 3);
  t.same(all.map((e) => e.stage), ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
  const base = {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Metadata',
    requestURI: '/api/v1/namespaces/meta/configmaps?watch=1&timeoutSeconds=1', verb: 'watch', user: ADMIN_USER,
    objectRef: { resource: 'configmaps', namespace: 'meta', apiVersion: 'v1' },
  };
  t.same(plain(all[0]), { ...base, stage: 'RequestReceived' });
  const done = { responseStatus: { metadata: {}, code: 200 }, annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' } };
  t.same(plain(all[1]), { ...base, stage: 'ResponseStarted', ...done });
  t.same(plain(all[2]), { ...base, stage: 'ResponseComplete', ...done });
});

t.test('an exec: ResponseStarted with 101, ResponseComplete when the stream ends', async (t) => {
  t.equal((await post('/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } })).status, 201);
  const st = await req({
    path: '/api/v1/nodes/n1/status', method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: agentPort } } } }),
  });
  t.equal(st.status, 200, st.body);
  t.equal((await post('/api/v1/namespaces/meta/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { nodeName: 'n1', containers: [{ name: 'a', image: 'x' }] } })).status, 201);
  const path = '/api/v1/namespaces/meta/pods/p/exec?command=ls&stdout=true';
  const head = await new Promise<string>((resolve) => {
    const s = connect({ host: '127.0.0.1', port: api.port, ...admin, ALPNProtocols: ['http/1.1'], servername: 'localhost' });
    let buf = '';
    s.on('secureConnect', () => s.write([
      `GET ${path} HTTP/1.1`, 'Host: localhost', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io', 'Audit-ID: exec-1', '', '',
    ].join('\r\n')));
    s.on('data', (d: Buffer) => { buf += d.toString(); });
    s.on('error', () => undefined);
    s.on('close', () => resolve(buf));
    setTimeout(() => s.destroy(), 5000);
  });
  t.match(head, /^HTTP\/1\.1 101/);
  const all = await eventsOf('exec-1', 3);
  t.same(all.map((e) => e.stage), ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
  const base = {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Metadata', requestURI: path, verb: 'get', user: ADMIN_USER,
    objectRef: { resource: 'pods', namespace: 'meta', name: 'p', apiVersion: 'v1', subresource: 'exec' },
  };
  const done = { responseStatus: { metadata: {}, code: 101 }, annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' } };
  t.same(plain(all[0]), { ...base, stage: 'RequestReceived' });
  t.same(plain(all[1]), { ...base, stage: 'ResponseStarted', ...done });
  t.same(plain(all[2]), { ...base, stage: 'ResponseComplete', ...done });
});

t.test("admission plugins' audit annotations join the event (PodSecurity's enforce-policy)", async (t) => {
  const ns = await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'psa', labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } });
  t.equal(ns.status, 201);
  const r = await post('/api/v1/namespaces/psa/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'a', image: 'x' }] } });
  t.equal(r.status, 201, r.body);
  const all = await eventsOf(r.headers['audit-id'] as string, 2);
  const complete = all.find((e) => e.stage === 'ResponseComplete');
  t.equal(complete?.annotations['pod-security.kubernetes.io/enforce-policy'], 'baseline:latest');
  t.equal(complete?.annotations['authorization.k8s.io/decision'], 'allow');
  t.notOk(all.find((e) => e.stage === 'RequestReceived')?.annotations, 'none on RequestReceived');
});
