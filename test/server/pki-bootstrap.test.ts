// The server's PKI: first start creates every pair, a restart reuses them, and only what became
// unusable (missing, mismatched, new SAN needed) is re-issued.
import t from 'tap';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LEAF_NAMES, bootstrapPki, type PkiRequest } from '../../src/daemons/server/pki-bootstrap.js';
import { coreconfigText, writeServerCoreconfigs } from '../../src/daemons/server/admin-coreconfig.js';
import { parseCoreconfig } from '../../src/client/coreconfig.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-pki-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const pkiDir = join(dir, 'pki');

const request = (over: Partial<PkiRequest> = {}): PkiRequest => ({
  dir: pkiDir,
  nodeName: 'node-a',
  apiserverDnsNames: ['localhost', 'node-a', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
  apiserverIps: ['192.0.2.10', '127.0.0.1', '10.0.0.1'],
  nodeagentDnsNames: ['node-a', 'localhost'],
  nodeagentIps: ['127.0.0.1', '192.0.2.10'],
  ...over,
});

async function cert(name: string): Promise<X509Certificate> {
  return new X509Certificate(await readFile(join(pkiDir, name)));
}

t.test('first start creates the CA, every leaf and the service-account pair', async (t) => {
  const r = await bootstrapPki(request());
  t.ok(r.caCreated);
  t.same([...r.written].sort(), ['ca', 'sa', ...LEAF_NAMES].sort());
  const ca = await cert('ca.crt');
  t.ok(ca.ca, 'the CA is a CA');
  t.equal(ca.fingerprint256, r.caFingerprint);
  for (const leaf of LEAF_NAMES) {
    const c = await cert(`${leaf}.crt`);
    t.ok(c.verify(ca.publicKey), `${leaf} is signed by the CA`);
    t.ok(c.checkPrivateKey(createPrivateKey(await readFile(join(pkiDir, `${leaf}.key`)))), `${leaf} key matches`);
    t.equal((await stat(join(pkiDir, `${leaf}.key`))).mode & 0o777, 0o600, `${leaf}.key is 0600`);
  }
  t.equal((await stat(pkiDir)).mode & 0o777, 0o700);
  const api = await cert('apiserver.crt');
  for (const san of ['DNS:kubernetes.default.svc.cluster.local', 'DNS:localhost', 'IP Address:127.0.0.1', 'IP Address:10.0.0.1', 'IP Address:192.0.2.10']) {
    t.match(api.subjectAltName, san, `apiserver SAN ${san}`);
  }
  t.match((await cert('admin.crt')).subject, /CN=corectl-admin\nO=system:masters|O=system:masters\nCN=corectl-admin/);
  t.match((await cert('nodeagent-client.crt')).subject, /CN=system:node:node-a/);
  t.match((await cert('nodeagent-client.crt')).subject, /O=system:nodes/);
  // The API server's identity towards node agents is not cluster-admin (issue 27): no group at all.
  t.equal((await cert('apiserver-nodeagent-client.crt')).subject, 'CN=corectl-apiserver-nodeagent-client');
  t.match((await cert('controller-manager.crt')).subject, /CN=system:kube-controller-manager/);
  t.match((await cert('scheduler.crt')).subject, /CN=system:kube-scheduler/);
  t.match(await readFile(join(pkiDir, 'sa.pub'), 'utf8'), /BEGIN PUBLIC KEY/);
});

t.test('a restart reuses everything (same CA fingerprint, nothing written)', async (t) => {
  const before = await readFile(join(pkiDir, 'admin.crt'), 'utf8');
  const r = await bootstrapPki(request());
  t.notOk(r.caCreated);
  t.same(r.written, []);
  t.equal(r.caFingerprint, (await cert('ca.crt')).fingerprint256);
  t.equal(await readFile(join(pkiDir, 'admin.crt'), 'utf8'), before);
});

t.test('only unusable pairs are re-issued', async (t) => {
  const caFp = (await cert('ca.crt')).fingerprint256;
  // A new advertise address: only the serving certificates need it.
  let r = await bootstrapPki(request({ apiserverIps: ['192.0.2.99', '127.0.0.1', '10.0.0.1'], nodeagentIps: ['127.0.0.1', '192.0.2.10'] }));
  t.same(r.written, ['apiserver']);
  t.match((await cert('apiserver.crt')).subjectAltName, 'IP Address:192.0.2.99');
  // A crash between key and certificate writes: the key no longer matches.
  const other = await readFile(join(pkiDir, 'scheduler.key'));
  await writeFile(join(pkiDir, 'controller-manager.key'), other);
  await unlink(join(pkiDir, 'admin.key'));
  r = await bootstrapPki(request({ apiserverIps: ['192.0.2.99', '127.0.0.1', '10.0.0.1'] }));
  t.same([...r.written].sort(), ['admin', 'controller-manager']);
  // A renamed node: its client and serving pairs follow.
  r = await bootstrapPki(request({ nodeName: 'node-b', nodeagentDnsNames: ['node-b', 'localhost'], apiserverIps: ['192.0.2.99', '127.0.0.1', '10.0.0.1'] }));
  t.same([...r.written].sort(), ['nodeagent', 'nodeagent-client']);
  t.match((await cert('nodeagent-client.crt')).subject, /CN=system:node:node-b/);
  t.equal(r.caFingerprint, caFp, 'the CA stayed');
});

t.test('a broken CA makes a new CA and re-issues every leaf', async (t) => {
  const oldFp = (await cert('ca.crt')).fingerprint256;
  await unlink(join(pkiDir, 'ca.key'));
  const r = await bootstrapPki(request());
  t.ok(r.caCreated);
  t.not(r.caFingerprint, oldFp);
  t.same([...r.written].sort(), ['ca', ...LEAF_NAMES].sort());
});

t.test('coreconfig files: admin embeds its credentials, daemons name files', async (t) => {
  const { pkiPaths } = await import('../../src/daemons/server/pki-bootstrap.js');
  const paths = await writeServerCoreconfigs({ dataDir: dir, server: 'https://127.0.0.1:6443', pki: pkiPaths(pkiDir), nodeName: 'node-a' });
  const admin = await readFile(paths.admin, 'utf8');
  t.match(admin, /client-certificate-data: /);
  t.equal((await stat(paths.admin)).mode & 0o777, 0o600);
  const conn = await parseCoreconfig(admin, paths.admin);
  t.equal(conn.server, 'https://127.0.0.1:6443');
  t.ok(conn.cert && conn.key && conn.ca);
  t.match(new X509Certificate(conn.cert!).subject, /CN=corectl-admin/);
  const na = await parseCoreconfig(await readFile(paths.nodeagent, 'utf8'), paths.nodeagent);
  t.match(new X509Certificate(na.cert!).subject, /CN=system:node:node-a/);
  t.match(await readFile(paths.scheduler, 'utf8'), new RegExp(`client-certificate: ${join(pkiDir, 'scheduler.crt')}`));
  t.match(coreconfigText({ server: 'https://x:1', user: 'u', credentials: { embed: false, caFile: '/c', certFile: '/a', keyFile: '/b' } }), /current-context: u@corectl/);
});
