/**
 * `kubectl certificate approve|deny` against the API server's certificatesigningrequests/approval
 * subresource: the decision is stored with its timestamps, status writes cannot take it back,
 * and Approved and Denied exclude each other. Runs with kubectl.1.33 (else 1.27) and openssl.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

const bin = kubectlBinary(33) ?? kubectlBinary(27);
let openssl = true;
try { execFileSync('openssl', ['version']); } catch { openssl = false; }


t.test('kubectl certificate approve and deny', { skip: !bin ? 'no versioned kubectl installed' : !openssl ? 'openssl not installed' : false }, async (t) => {
  const a = await startApiserver();
  const work = await mkdtemp(join(tmpdir(), 'corectl-csr-'));
  t.teardown(async () => { await a.stop(); await rm(work, { recursive: true, force: true }); });
  const kc = kubectlRunner(bin!, a.coreconfigPath, join(work, 'cache')).run;
  const csr = async (name: string): Promise<string> => {
    const file = join(work, `${name}.csr`);
    execFileSync('openssl', ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(work, `${name}.key`), '-subj', `/CN=${name}/O=dev`, '-out', file], { stdio: 'ignore' });
    const request = (await readFile(file)).toString('base64');
    return `apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: ${name}}\nspec:\n  request: ${request}\n  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n`;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const get = async (name: string): Promise<any> => JSON.parse((await kc(['get', 'csr', name, '-o', 'json'])).stdout);

  let r = await kc(['apply', '-f', '-'], await csr('alice'));
  t.equal(r.code, 0, r.stderr);
  t.match((await kc(['get', 'csr', 'alice'])).stdout, /^alice\s+\S+\s+kubernetes.io\/kube-apiserver-client\s+\S+\s+<none>\s+Pending$/m);
  r = await kc(['certificate', 'approve', 'alice']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /certificatesigningrequest.certificates.k8s.io\/alice approved/);
  let o = await get('alice');
  t.match(o.status.conditions, [{ type: 'Approved', status: 'True', reason: 'KubectlApprove' }]);
  t.match(o.status.conditions[0].lastUpdateTime, /^\d{4}-\d\d-\d\dT/, 'lastUpdateTime filled');
  t.match(o.status.conditions[0].lastTransitionTime, /^\d{4}-\d\d-\d\dT/, 'lastTransitionTime filled');
  t.match((await kc(['get', 'csr', 'alice'])).stdout, /^alice\s.*\sApproved$/m);

  // The status subresource keeps the decision.
  r = await kc(['patch', 'csr', 'alice', '--subresource=status', '--type=merge', '-p', '{"status":{"conditions":[{"type":"Failed","status":"True","reason":"X"}]}}']);
  t.equal(r.code, 0, r.stderr);
  o = await get('alice');
  t.same(o.status.conditions.map((c: { type: string }) => c.type), ['Approved', 'Failed'], 'status write kept Approved and added Failed');

  // Through approval, a decision cannot be removed, nor both be given.
  r = await kc(['patch', 'csr', 'alice', '--subresource=approval', '--type=json', '-p', '[{"op":"add","path":"/status/conditions/-","value":{"type":"Denied","status":"True"}}]']);
  t.not(r.code, 0);
  t.match(r.stderr, /Approved and Denied conditions are mutually exclusive/);

  t.equal((await kc(['apply', '-f', '-'], await csr('bob'))).code, 0);
  r = await kc(['certificate', 'deny', 'bob']);
  t.equal(r.code, 0, r.stderr);
  t.match((await get('bob')).status.conditions, [{ type: 'Denied', status: 'True', reason: 'KubectlDeny' }]);
  t.match((await kc(['get', 'csr', 'bob'])).stdout, /^bob\s.*\sDenied$/m);
});
