// corectl server's approval of node serving certificate requests (kubernetes.io/kubelet-serving),
// against a real API server: a node's request for its own host name and InternalIP is approved;
// a request for another node's address, for another node's name, from a user outside
// system:nodes, with client usages, or from a node not registered yet is left for the admin.
import t from 'tap';
import { pino } from 'pino';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { makeRequest, SERVING_SIGNER } from '../../src/daemons/nodeagent/certificates/csr.js';
import { APPROVAL_MESSAGE, ServingCsrApprover } from '../../src/daemons/server/serving-csr-approver.js';
import { startApiserver } from '../helpers/apiserver.js';

const CSRS = { group: 'certificates.k8s.io', version: 'v1', resource: 'certificatesigningrequests' };
const NODES = { group: '', version: 'v1', resource: 'nodes' };

const dir = await mkdtemp(join(tmpdir(), 'corectl-serving-csr-'));
const tokens = join(dir, 'tokens.csv');
await writeFile(tokens, [
  'n1-token,system:node:n1,n1,"system:nodes"',
  'n3-token,system:node:n3,n3,"system:nodes"',
  'mallory-token,mallory,m,"system:authenticated"',
].join('\n') + '\n');
const api = await startApiserver({ args: [`--token-auth-file=${tokens}`] });
const adminConn = await loadCoreconfig({ path: api.coreconfigPath });
const admin = new RestClient({ connection: adminConn, contentType: 'application/json', qps: 0 });
const as = (token: string): RestClient => new RestClient({ connection: { server: adminConn.server, ...(adminConn.ca ? { ca: adminConn.ca } : {}), token }, contentType: 'application/json', qps: 0 });
const n1 = as('n1-token');
const n3 = as('n3-token');
const mallory = as('mallory-token');
t.teardown(async () => { for (const c of [admin, n1, n3, mallory]) c.close(); await api.stop(); await rm(dir, { recursive: true, force: true }); });

for (const [name, ip] of [['n1', '10.9.0.1'], ['n2', '10.9.0.2']] as const) {
  const node = await admin.create(NODES, { metadata: { name } });
  await admin.update(NODES, { ...node, status: { addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: `${name}.example` }] } }, { subresource: 'status' });
}

async function send(client: RestClient, o: { cn: string; dns?: string[]; ips?: string[]; usages?: string[] }): Promise<string> {
  const { csrPem } = await makeRequest({ signerName: SERVING_SIGNER, nodeName: o.cn, dnsNames: o.dns ?? [], ips: o.ips ?? [] });
  const csr = await client.create(CSRS, { metadata: { generateName: 'csr-' }, spec: { request: Buffer.from(csrPem).toString('base64'), signerName: SERVING_SIGNER, usages: o.usages ?? ['digital signature', 'server auth'] } });
  return csr.metadata?.name ?? '';
}

const approvedBy = (csr: KubeObject): string | undefined =>
  ((csr.status ?? {}) as { conditions?: { type: string; message?: string }[] }).conditions?.find((c) => c.type === 'Approved')?.message;

t.test('approves a node\'s own names only', async (t) => {
  const own = await send(n1, { cn: 'n1', dns: ['n1.example'], ips: ['10.9.0.1'] });
  const foreignIp = await send(n1, { cn: 'n1', dns: ['n1.example'], ips: ['10.9.0.2'] });
  const foreignName = await send(n1, { cn: 'n1', dns: ['n2.example'] });
  const otherNode = await send(n1, { cn: 'n2', dns: ['n2.example'], ips: ['10.9.0.2'] });
  const notANode = await send(mallory, { cn: 'n1', dns: ['n1.example'], ips: ['10.9.0.1'] });
  const clientUsage = await send(n1, { cn: 'n1', dns: ['n1.example'], usages: ['digital signature', 'client auth'] });
  const unregistered = await send(n3, { cn: 'n3', dns: ['n3.example'] });
  const approver = new ServingCsrApprover(admin, pino({ level: 'silent' }));
  t.same(await approver.pass(), [own], 'one pass approves exactly the request for the node\'s own names');
  t.equal(approvedBy(await admin.get(CSRS, own)), APPROVAL_MESSAGE);
  for (const [what, name] of [['another node\'s IP', foreignIp], ['another node\'s host name', foreignName], ['another node\'s CN', otherNode],
    ['a requester outside system:nodes', notANode], ['client usages', clientUsage], ['a node not registered', unregistered]] as const) {
    t.equal(approvedBy(await admin.get(CSRS, name)), undefined, `left for the admin: ${what}`);
  }
  t.same(await approver.pass(), [], 'a second pass approves nothing more');
  const n3node = await admin.create(NODES, { metadata: { name: 'n3' } });
  await admin.update(NODES, { ...n3node, status: { addresses: [{ type: 'Hostname', address: 'n3.example' }] } }, { subresource: 'status' });
  t.same(await approver.pass(), [unregistered], 'once the node registered, its request is approved');
});
