import t from 'tap';
import { webcrypto, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import type { ControllerContext } from '../../src/daemons/controller-manager/controller-registry.js';
import { CsrApprovingController } from '../../src/daemons/controller-manager/controllers/csrapproving.js';
import { CsrCleanerController, cleanupReason } from '../../src/daemons/controller-manager/controllers/csrcleaner.js';
import { CsrSigningController } from '../../src/daemons/controller-manager/controllers/csrsigning.js';
import { updateApproval } from '../../src/daemons/controller-manager/controllers/csr/approval.js';
import { certificateTtl, usageExtensions, validityWindow } from '../../src/daemons/controller-manager/controllers/csr/authority.js';
import { metaTime as timeString } from '../../src/api/meta/time.js';
import { CERTIFICATES_V1, conditionsOf } from '../../src/daemons/controller-manager/controllers/csr/conditions.js';
import { parseRequest } from '../../src/daemons/controller-manager/controllers/csr/request.js';
import { apiServerClientRule, kubeletClientRule, kubeletServingRule } from '../../src/daemons/controller-manager/controllers/csr/signer-rules.js';
import { loadX509 } from '../../src/daemons/controller-manager/controllers/csr/x509.js';
import { createCA, issueCert, loadCA, writePemFile } from '../../src/util/pki.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

const HOUR = 3600_000;

interface RequestSubject { cn: string; orgs?: string[]; dns?: string[]; ips?: string[] }

/** A PKCS#10 request (base64 of PEM, as spec.request holds it) and its public key (SPKI, base64). */
async function makeRequest(s: RequestSubject): Promise<{ request: string; spki: string }> {
  const x509 = await loadX509();
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const sans = [...(s.dns ?? []).map((value) => ({ type: 'dns' as const, value })), ...(s.ips ?? []).map((value) => ({ type: 'ip' as const, value }))];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [...(s.orgs ?? []).map((o) => ({ O: [o] })), { CN: [s.cn] }],
    keys, signingAlgorithm: alg,
    extensions: sans.length ? [new x509.SubjectAlternativeNameExtension(sans)] : [],
  });
  const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey)).toString('base64');
  return { request: Buffer.from(csr.toString('pem')).toString('base64'), spki };
}

function csrObject(name: string, request: string, signerName: string, usages: string[], extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name }, spec: { request, signerName, usages, ...extra } };
}

/** What `kubectl certificate approve|deny` writes: the condition, dated `at`. */
async function decide(client: RestClient, name: string, type: 'Approved' | 'Denied', at = Date.now()): Promise<void> {
  const csr = await client.get(CERTIFICATES_V1, name);
  const verb = type === 'Approved' ? 'approve' : 'deny';
  const condition = { type, status: 'True', reason: type === 'Approved' ? 'KubectlApprove' : 'KubectlDeny', message: `This CSR was ${type.toLowerCase()} by kubectl certificate ${verb}.`, lastUpdateTime: timeString(at) };
  await updateApproval(client, { ...csr, status: { ...(csr.status ?? {}), conditions: [...conditionsOf(csr), condition] } });
}

const certificatePem = (csr: KubeObject): string => Buffer.from(String((csr.status as { certificate?: string } | undefined)?.certificate ?? ''), 'base64').toString('utf8');
const condition = (csr: KubeObject, type: string): Record<string, unknown> | undefined => conditionsOf(csr).find((c) => c.type === type) as Record<string, unknown> | undefined;

t.test('the CSR controllers are selectable', async (t) => {
  for (const name of ['csrsigning', 'csrapproving', 'csrcleaner'] as const) await assertSelectable(t, name);
});

t.test('signing policy: TTL, validity window and usages as Kubernetes computes them', async (t) => {
  const year = 8760 * HOUR;
  t.equal(certificateTtl(year, undefined), year, 'no request: the configured duration');
  t.equal(certificateTtl(year, 3600), HOUR, 'a shorter request wins');
  t.equal(certificateTtl(HOUR, 7200), HOUR, 'never beyond the configured duration');
  t.equal(certificateTtl(year, 60), 10 * 60_000, 'at least 10 minutes');

  const now = Date.UTC(2030, 0, 1);
  t.same(validityWindow(now, HOUR, now + year), { notBefore: now - 300_000, notAfter: now + HOUR }, 'short-lived: backdated start, full TTL');
  t.same(validityWindow(now, 10 * HOUR, now + year), { notBefore: now - 300_000, notAfter: now + 10 * HOUR - 300_000 }, 'long-lived: the end is backdated too');
  t.same(validityWindow(now, year, now + HOUR), { notBefore: now - 300_000, notAfter: now + HOUR }, 'capped at the CA expiry');
  t.throws(() => validityWindow(now, HOUR, now - 1), /expired/);

  t.same(usageExtensions(['digital signature', 'key encipherment', 'client auth', 'server auth']), { keyUsage: 5, extKeyUsages: ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2'] }, 'EKUs in Go order');
  t.throws(() => usageExtensions(['bogus']), /unrecognized usage values/);
});

t.test('signer rules and their messages', async (t) => {
  const node = await parseRequest({ spec: { request: (await makeRequest({ cn: 'system:node:n1', orgs: ['system:nodes'] })).request } });
  const serving = await parseRequest({ spec: { request: (await makeRequest({ cn: 'system:node:n1', orgs: ['system:nodes'], dns: ['n1.example'], ips: ['10.0.0.1'] })).request } });
  const alice = await parseRequest({ spec: { request: (await makeRequest({ cn: 'alice', orgs: ['dev'] })).request } });
  t.same([serving.dnsNames, serving.ipAddresses, alice.commonName, alice.organizations], [['n1.example'], ['10.0.0.1'], 'alice', ['dev']], 'request parsed');

  t.equal(kubeletClientRule(node, ['digital signature', 'key encipherment', 'client auth']), undefined);
  t.equal(kubeletClientRule(node, ['digital signature', 'client auth']), undefined, 'key encipherment optional');
  t.equal(kubeletClientRule(node, ['client auth']), 'usages did not match [client auth digital signature key encipherment]');
  t.equal(kubeletClientRule(alice, ['digital signature', 'client auth']), 'subject organization is not system:nodes');
  t.equal(kubeletClientRule(serving, ['digital signature', 'client auth']), 'DNS subjectAltNames are not allowed');

  t.equal(kubeletServingRule(serving, ['digital signature', 'key encipherment', 'server auth']), undefined);
  t.equal(kubeletServingRule(node, ['digital signature', 'server auth']), 'DNS or IP subjectAltName is required');
  t.equal(kubeletServingRule(serving, ['digital signature', 'key encipherment', 'client auth']), 'usages did not match [digital signature key encipherment server auth]');

  t.equal(apiServerClientRule(alice, ['client auth']), undefined);
  t.equal(apiServerClientRule(alice, ['digital signature']), 'missing required usage for client certificate: client auth');
  t.equal(apiServerClientRule(alice, ['client auth', 'server auth']), 'invalid usage for client certificate: server auth');
});

t.test('signing does not run without the CA files', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _e, cb) => { lines.push(chunk.toString('utf8')); cb(); } });
  const untouchable = new Proxy({}, { get: (_o, p) => { throw new Error(`touched ${String(p)}`); } });
  const ctx: ControllerContext = {
    client: untouchable as ControllerContext['client'], informers: untouchable as ControllerContext['informers'],
    config: parseControllerManagerArgs(['--cluster-signing-cert-file=/nonexistent/ca.pem', '--cluster-signing-key-file=/nonexistent/ca.key']).config,
    log: pino({ level: 'info' }, sink), signal: new AbortController().signal,
  };
  await new CsrSigningController().run(ctx);
  t.equal(lines.length, 1, 'one line');
  t.match(JSON.parse(lines[0] ?? '{}'), { msg: /skipping the CSR signing controller because \/nonexistent\/ca\.pem does not exist/ });
});

t.test('signing and approving against a real API server', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-csr-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ca = await createCA({ commonName: 'corectl-cluster-signer' });
  await writePemFile(join(dir, 'ca.pem'), ca.certPem);
  await writePemFile(join(dir, 'ca.key'), ca.keyPem);
  // One approving worker: requests are then judged strictly in the order they were created.
  const c = await startControllers([new CsrSigningController(), new CsrApprovingController({ workers: 1 })], {
    args: [`--cluster-signing-cert-file=${join(dir, 'ca.pem')}`, `--cluster-signing-key-file=${join(dir, 'ca.key')}`],
  });
  t.teardown(() => c.stop());
  const caCert = new X509Certificate(ca.certPem);
  const signed = (name: string): Promise<KubeObject> => waitFor(`${name} signed`, async () => {
    const o = await c.client.get(CERTIFICATES_V1, name);
    return certificatePem(o) ? o : undefined;
  });

  await t.test('an approved client request is signed by the cluster CA, for the requested time', async (t) => {
    const { request, spki } = await makeRequest({ cn: 'alice', orgs: ['dev'] });
    await c.client.create(CERTIFICATES_V1, csrObject('alice', request, 'kubernetes.io/kube-apiserver-client', ['digital signature', 'client auth'], { expirationSeconds: 3600 }));
    await decide(c.client, 'alice', 'Approved');
    const cert = new X509Certificate(certificatePem(await signed('alice')));
    t.same(cert.subject.split('\n').sort(), ['CN=alice', 'O=dev'], 'subject from the request');
    t.equal(cert.issuer, caCert.subject, 'issuer is the signing CA');
    t.ok(cert.checkIssued(caCert) && cert.verify(caCert.publicKey), 'signed by the CA key');
    t.equal(cert.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'), spki, 'the requested key');
    t.same(cert.keyUsage, ['1.3.6.1.5.5.7.3.2'], 'client auth only');
    t.notOk(cert.ca);
    t.equal((Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 1000, 3600 + 300, 'expirationSeconds honoured, start backdated 5 minutes');
  });

  await t.test('a kubelet-serving request without server auth fails validation', async (t) => {
    const { request } = await makeRequest({ cn: 'system:node:n1', orgs: ['system:nodes'], dns: ['n1.example'] });
    await c.client.create(CERTIFICATES_V1, csrObject('serving-bad', request, 'kubernetes.io/kubelet-serving', ['digital signature', 'key encipherment', 'client auth']));
    await decide(c.client, 'serving-bad', 'Approved');
    const failed = await waitFor('Failed condition', async () => condition(await c.client.get(CERTIFICATES_V1, 'serving-bad'), 'Failed'));
    t.match(failed, { status: 'True', reason: 'SignerValidationFailure', message: 'usages did not match [digital signature key encipherment server auth]' });
    t.equal(certificatePem(await c.client.get(CERTIFICATES_V1, 'serving-bad')), '', 'no certificate');
  });

  await t.test('a valid kubelet-serving request is signed with its SANs', async (t) => {
    const { request } = await makeRequest({ cn: 'system:node:n1', orgs: ['system:nodes'], dns: ['n1.example'], ips: ['10.0.0.1'] });
    await c.client.create(CERTIFICATES_V1, csrObject('serving-ok', request, 'kubernetes.io/kubelet-serving', ['digital signature', 'key encipherment', 'server auth']));
    await decide(c.client, 'serving-ok', 'Approved');
    const cert = new X509Certificate(certificatePem(await signed('serving-ok')));
    t.equal(cert.subjectAltName, 'DNS:n1.example, IP Address:10.0.0.1');
    t.same(cert.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'server auth');
  });

  await t.test('node client requests are auto-approved after a SubjectAccessReview, others are not', async (t) => {
    const mismatched = await makeRequest({ cn: 'alice', orgs: ['system:nodes'] });
    await c.client.create(CERTIFICATES_V1, csrObject('not-a-node', mismatched.request, 'kubernetes.io/kube-apiserver-client-kubelet', ['digital signature', 'client auth']));
    const node = await makeRequest({ cn: 'system:node:n1', orgs: ['system:nodes'] });
    await c.client.create(CERTIFICATES_V1, csrObject('node-n1', node.request, 'kubernetes.io/kube-apiserver-client-kubelet', ['digital signature', 'key encipherment', 'client auth']));
    const approved = await waitFor('node-n1 approved', async () => condition(await c.client.get(CERTIFICATES_V1, 'node-n1'), 'Approved'));
    t.match(approved, { status: 'True', reason: 'AutoApproved', message: 'Auto approving kubelet client certificate after SubjectAccessReview.' });
    const cert = new X509Certificate(certificatePem(await signed('node-n1')));
    t.same(cert.subject.split('\n').sort(), ['CN=system:node:n1', 'O=system:nodes'], 'then signed by the kubelet client signer');
    // The single approving worker judged not-a-node before node-n1.
    t.same(conditionsOf(await c.client.get(CERTIFICATES_V1, 'not-a-node')), [], 'a request that is not a node client request stays pending');
  });

  await t.test("a node's request for its own certificate is approved as selfnodeclient", async (t) => {
    const base = dirname(c.coreconfigPath);
    const clusterCa = await loadCA(await readFile(join(base, 'ca.crt'), 'utf8'), await readFile(join(base, 'ca.key'), 'utf8'));
    const id = await issueCert({ ca: clusterCa, commonName: 'system:node:n2', organizations: ['system:nodes'], usages: 'client' });
    const admin = await loadCoreconfig({ path: c.coreconfigPath });
    const asNode = new RestClient({ connection: { ...admin, cert: Buffer.from(id.certPem), key: Buffer.from(id.keyPem) }, qps: 0, contentType: 'application/json' });
    t.teardown(() => asNode.close());
    const { request } = await makeRequest({ cn: 'system:node:n2', orgs: ['system:nodes'] });
    const created = await asNode.create(CERTIFICATES_V1, csrObject('node-n2', request, 'kubernetes.io/kube-apiserver-client-kubelet', ['digital signature', 'client auth']));
    t.equal((created.spec as { username?: string }).username, 'system:node:n2', 'the API server recorded the requester');
    const approved = await waitFor('node-n2 approved', async () => condition(await c.client.get(CERTIFICATES_V1, 'node-n2'), 'Approved'));
    t.match(approved, { reason: 'AutoApproved', message: 'Auto approving self kubelet client certificate after SubjectAccessReview.' });
  });
});

t.test('cleanup rules as Kubernetes ages requests', async (t) => {
  const now = Date.UTC(2030, 0, 1);
  const at = (ms: number): string => timeString(now - ms);
  const csr = (status: Record<string, unknown>, created = at(0)): KubeObject => ({ metadata: { name: 'x', creationTimestamp: created }, status });
  const cond = (type: string, ago: number): Record<string, unknown> => ({ type, status: 'True', lastUpdateTime: at(ago) });
  const ca = await createCA({ commonName: 'c', validityMs: HOUR });
  const certificate = Buffer.from(ca.certPem).toString('base64');

  t.equal(cleanupReason(csr({ conditions: [cond('Denied', 2 * HOUR)] }), now), 'denied more than 1h ago');
  t.equal(cleanupReason(csr({ conditions: [cond('Denied', HOUR / 2)] }), now), undefined, 'denied recently');
  t.equal(cleanupReason(csr({ conditions: [cond('Approved', 2 * HOUR), cond('Failed', 2 * HOUR)] }), now), 'failed more than 1h ago');
  t.equal(cleanupReason(csr({ conditions: [cond('Approved', 2 * HOUR)], certificate }), now), 'approved and issued more than 1h ago');
  t.equal(cleanupReason(csr({ conditions: [cond('Approved', 2 * HOUR)] }), now), undefined, 'approved, still waiting for its certificate');
  t.equal(cleanupReason(csr({}, at(25 * HOUR)), now), 'pending for more than 24h');
  t.equal(cleanupReason(csr({}, at(23 * HOUR)), now), undefined, 'pending for less than a day');
  t.equal(cleanupReason(csr({ conditions: [{ type: 'Denied', status: 'True' }] }, at(48 * HOUR)), now), undefined, 'an undated condition never ages');
  const later = Date.now() + 2 * HOUR;
  t.equal(cleanupReason(csr({ conditions: [{ type: 'Approved', status: 'True', lastUpdateTime: timeString(later) }], certificate }), later), 'its certificate has expired');
});

t.test('the cleaner deletes an old denied request and keeps a recent one', async (t) => {
  const c = await startControllers(new CsrCleanerController({ periodMs: 50 }));
  t.teardown(() => c.stop());
  const { request } = await makeRequest({ cn: 'bob' });
  // The recent one is created and denied first: once the cleaner's cache holds the old denial it holds this one too.
  await c.client.create(CERTIFICATES_V1, csrObject('recent', request, 'kubernetes.io/kube-apiserver-client', ['client auth']));
  await decide(c.client, 'recent', 'Denied');
  await c.client.create(CERTIFICATES_V1, csrObject('old', request, 'kubernetes.io/kube-apiserver-client', ['client auth']));
  await decide(c.client, 'old', 'Denied', Date.now() - 2 * HOUR);
  await waitFor('old deleted', async () => {
    try { await c.client.get(CERTIFICATES_V1, 'old'); return false; } catch (e) { return (e as { code?: number }).code === 404; }
  });
  t.match(condition(await c.client.get(CERTIFICATES_V1, 'recent'), 'Denied'), { reason: 'KubectlDeny' }, 'the recent one stays');
});
