// The node agent's certificate pieces: the CSR it sends (kubelet's subject and usages), the
// pair files in --cert-dir (dated file, current symlink), the jittered 70-90 % rotation
// deadline, and the bootstrap's choices (a usable coreconfig is kept; an expired one is
// replaced from the stored pair without asking the cluster).
import t from 'tap';
import { pino } from 'pino';
import { lstat, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapCoreconfigText, certificateCoreconfigText } from '../../src/client/bootstrap-coreconfig.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { bootstrapClientCertificate } from '../../src/daemons/nodeagent/certificates/bootstrap.js';
import { CLIENT_PREFIX, currentPath, loadCurrent, storePair } from '../../src/daemons/nodeagent/certificates/cert-store.js';
import { CLIENT_SIGNER, csrOutcome, makeRequest, SERVING_SIGNER, usagesFor } from '../../src/daemons/nodeagent/certificates/csr.js';
import { rotationDeadline } from '../../src/daemons/nodeagent/certificates/rotation.js';
import { createCA, issueCert, loadX509 } from '../../src/util/pki.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-certs-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const log = pino({ level: 'silent' });
const ca = await createCA({ commonName: 'cluster-ca' });

t.test('the CSR: CN system:node:<name>, O system:nodes, kubelet usages; SANs only when asked', async (t) => {
  const x509 = await loadX509();
  const client = new x509.Pkcs10CertificateRequest((await makeRequest({ signerName: CLIENT_SIGNER, nodeName: 'n1' })).csrPem);
  t.same(client.subjectName.getField('CN'), ['system:node:n1']);
  t.same(client.subjectName.getField('O'), ['system:nodes']);
  t.equal(client.getExtension('2.5.29.17'), null, 'a client request names no SANs (the signer refuses them)');
  t.ok(await client.verify(), 'self-signed with its key');
  t.same(usagesFor(CLIENT_SIGNER), ['digital signature', 'client auth']);
  t.same(usagesFor(SERVING_SIGNER), ['digital signature', 'server auth']);
  const serving = new x509.Pkcs10CertificateRequest((await makeRequest({ signerName: SERVING_SIGNER, nodeName: 'n1', dnsNames: ['n1'], ips: ['10.0.0.1'] })).csrPem);
  const names = new x509.SubjectAlternativeNameExtension(serving.getExtension('2.5.29.17')?.rawData ?? new ArrayBuffer(0)).names.items.map((n) => `${n.type}:${n.value}`);
  t.same(names, ['dns:n1', 'ip:10.0.0.1']);
});

t.test('a CSR outcome: certificate, denial, failure, nothing yet', async (t) => {
  t.same(csrOutcome({ metadata: { name: 'a' }, status: {} }), {});
  t.same(csrOutcome({ metadata: { name: 'a' }, status: { certificate: Buffer.from('PEM').toString('base64') } }), { certPem: 'PEM' });
  t.match(csrOutcome({ metadata: { name: 'a' }, status: { conditions: [{ type: 'Denied', status: 'True', reason: 'No' }] } }).refused, /a is denied: No/);
  t.match(csrOutcome({ metadata: { name: 'a' }, status: { conditions: [{ type: 'Failed', status: 'True', reason: 'SignerValidationFailure' }] } }).refused, /failed/);
});

t.test('pairs in --cert-dir: a dated 0600 file and the current symlink', async (t) => {
  const certDir = join(dir, 'store');
  const a = await issueCert({ ca, commonName: 'system:node:n1', organizations: ['system:nodes'], usages: 'client' });
  const stored = await storePair(certDir, CLIENT_PREFIX, a.certPem, a.keyPem, new Date(Date.UTC(2026, 0, 2, 3, 4, 5)));
  t.equal(await readlink(currentPath(certDir, CLIENT_PREFIX)), 'nodeagent-client-2026-01-02-03-04-05.pem');
  t.equal((await lstat(join(certDir, 'nodeagent-client-2026-01-02-03-04-05.pem'))).mode & 0o777, 0o600);
  t.ok(stored.notAfter > Date.now());
  const b = await issueCert({ ca, commonName: 'system:node:n1', organizations: ['system:nodes'], usages: 'client' });
  await storePair(certDir, CLIENT_PREFIX, b.certPem, b.keyPem, new Date(Date.UTC(2026, 0, 2, 3, 9, 5)));
  t.equal((await loadCurrent(certDir, CLIENT_PREFIX))?.certPem, b.certPem, 'current names the newest pair');
  t.ok((await lstat(join(certDir, 'nodeagent-client-2026-01-02-03-04-05.pem'))).isFile(), 'the older file stays');
  const conn = await loadCoreconfig({ path: await writeTo('cc', certificateCoreconfigText({ server: 'https://10.0.0.1:6443', caPem: ca.certPem, pairFile: currentPath(certDir, CLIENT_PREFIX) })) });
  t.equal(conn.cert?.toString(), b.certPem + b.keyPem, 'a coreconfig naming the symlink for both reads the pair file (TLS takes the blocks it needs)');
});

t.test('rotation at 70-90 % of the life, counted from notBefore', async (t) => {
  const pair = { notBefore: 1_000_000, notAfter: 2_000_000 };
  t.equal(rotationDeadline(pair, () => 0), 1_700_000);
  t.equal(rotationDeadline(pair, () => 0.5), 1_800_000);
  t.ok(rotationDeadline(pair, () => 0.999999) < 1_900_000);
  const ds = Array.from({ length: 1000 }, () => rotationDeadline(pair));
  t.ok(ds.every((d) => d >= 1_700_000 && d < 1_900_000), 'jittered within [70 %, 90 %)');
  t.ok(new Set(ds).size > 900, 'jittered');
});

async function writeTo(name: string, text: string): Promise<string> {
  const p = join(dir, name);
  await writeFile(p, text, { mode: 0o600 });
  return p;
}

t.test('bootstrap keeps a usable coreconfig and reuses a stored pair before asking the cluster', async (t) => {
  const certDir = join(dir, 'boot-pki');
  // The bootstrap coreconfig names a server nobody listens on: any request would fail.
  const bootstrap = await writeTo('bootstrap', bootstrapCoreconfigText({ server: 'https://127.0.0.1:1', caPem: ca.certPem, token: 'abcdef.0123456789abcdef' }));
  const valid = await issueCert({ ca, commonName: 'system:node:n1', organizations: ['system:nodes'], usages: 'client', validityMs: 3600_000 });
  const validFile = await writeTo('valid.pem', valid.certPem + valid.keyPem);
  const coreconfig = await writeTo('coreconfig', certificateCoreconfigText({ server: 'https://127.0.0.1:1', caPem: ca.certPem, pairFile: validFile }));
  const opts = { coreconfig, bootstrapCoreconfig: bootstrap, certDir, nodeName: 'n1', signal: AbortSignal.timeout(5000), log };
  t.equal(await bootstrapClientCertificate(opts), false, 'an unexpired coreconfig is used as it is');
  // Later the coreconfig's certificate has expired, and --cert-dir holds a newer pair.
  const fresh = await issueCert({ ca, commonName: 'system:node:n1', organizations: ['system:nodes'], usages: 'client', validityMs: 4 * 3600_000 });
  await storePair(certDir, CLIENT_PREFIX, fresh.certPem, fresh.keyPem);
  t.equal(await bootstrapClientCertificate({ ...opts, now: () => Date.now() + 2 * 3600_000 }), true, 'rewritten');
  t.equal((await lstat(coreconfig)).mode & 0o777, 0o600, 'the written coreconfig is private');
  const conn = await loadCoreconfig({ path: coreconfig });
  t.equal(conn.cert?.toString(), fresh.certPem + fresh.keyPem, 'the coreconfig now names the stored pair');
  t.equal(conn.server, 'https://127.0.0.1:1');
  t.notMatch(await readFile(coreconfig, 'utf8'), 'abcdef.0123456789abcdef', 'the token is not copied');
});

t.test('a bootstrap coreconfig naming several API servers: the written coreconfig names them all', async (t) => {
  const certDir = join(dir, 'boot-pki-ha');
  const servers = 'https://127.0.0.1:1,https://127.0.0.1:2';
  const bootstrap = await writeTo('bootstrap-ha', bootstrapCoreconfigText({ server: servers, caPem: ca.certPem, token: 'abcdef.0123456789abcdef' }));
  const pair = await issueCert({ ca, commonName: 'system:node:n2', organizations: ['system:nodes'], usages: 'client', validityMs: 3600_000 });
  await storePair(certDir, CLIENT_PREFIX, pair.certPem, pair.keyPem);
  const coreconfig = join(dir, 'coreconfig-ha');
  t.equal(await bootstrapClientCertificate({ coreconfig, bootstrapCoreconfig: bootstrap, certDir, nodeName: 'n2', signal: AbortSignal.timeout(5000), log }), true);
  t.same((await loadCoreconfig({ path: coreconfig })).servers, ['https://127.0.0.1:1', 'https://127.0.0.1:2']);
});
