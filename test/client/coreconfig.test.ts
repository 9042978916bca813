import t from 'tap';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCoreconfig, parseCoreconfig } from '../../src/client/coreconfig.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-coreconfig-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const b64 = (s: string): string => Buffer.from(s).toString('base64');
await mkdir(join(dir, 'pki'));
await writeFile(join(dir, 'pki', 'ca.crt'), 'CA-PEM');
await writeFile(join(dir, 'pki', 'c.crt'), 'CERT-PEM');
await writeFile(join(dir, 'pki', 'c.key'), 'KEY-PEM');
await writeFile(join(dir, 'token'), 'tok-from-file\n');

const yamlDoc = `apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: pki/ca.crt
- name: c2
  cluster:
    server: 127.0.0.1:7443
    insecure-skip-tls-verify: true
users:
- name: u1
  user:
    client-certificate: pki/c.crt
    client-key: pki/c.key
- name: u2
  user:
    tokenFile: token
- name: u3
  user:
    username: alice
    password: secret
- name: u4
  user:
    client-certificate-data: ${b64('CD')}
- name: u5
  user:
    token: abc
contexts:
- name: one
  context: { cluster: c1, user: u1 }
- name: two
  context: { cluster: c2, user: u2 }
- name: three
  context: { cluster: c1, user: u3 }
- name: four
  context: { cluster: c1, user: u4 }
- name: five
  context: { cluster: c1, user: u5 }
- name: ghost
  context: { cluster: nope, user: u1 }
`;
const yamlPath = join(dir, 'config.yaml');
await writeFile(yamlPath, yamlDoc);

t.test('YAML, current context, files resolved against the config directory', async (t) => {
  const c = await loadCoreconfig({ path: yamlPath });
  t.equal(c.server, 'https://127.0.0.1:6443');
  t.equal(c.ca?.toString(), 'CA-PEM');
  t.equal(c.cert?.toString(), 'CERT-PEM');
  t.equal(c.key?.toString(), 'KEY-PEM');
  t.equal(c.token, undefined);
});

t.test('explicit context: token file, skip-verify, scheme defaulted', async (t) => {
  const c = await loadCoreconfig({ path: yamlPath, context: 'two' });
  t.equal(c.server, 'https://127.0.0.1:7443');
  t.equal(c.insecureSkipTlsVerify, true);
  t.equal(c.token, 'tok-from-file');
  t.equal(c.tokenFile, join(dir, 'token'));
});

t.test('basic auth and bearer token', async (t) => {
  const b = await loadCoreconfig({ path: yamlPath, context: 'three' });
  t.same([b.username, b.password], ['alice', 'secret']);
  const tk = await loadCoreconfig({ path: yamlPath, context: 'five' });
  t.equal(tk.token, 'abc');
});

t.test('--master overrides the server', async (t) => {
  const c = await loadCoreconfig({ path: yamlPath, master: 'http://127.0.0.1:8080' });
  t.equal(c.server, 'http://127.0.0.1:8080');
  t.equal(c.cert?.toString(), 'CERT-PEM');
  const m = await loadCoreconfig({ master: '127.0.0.1:9443' });
  t.same(m, { server: 'https://127.0.0.1:9443' });
});

t.test('JSON documents and inline data', async (t) => {
  const doc = {
    apiVersion: 'v1', kind: 'Config', 'current-context': 'x',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': b64('CA2') } }],
    users: [{ name: 'u', user: { 'client-certificate-data': b64('C2'), 'client-key-data': b64('K2') } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
  };
  const p = join(dir, 'config.json');
  await writeFile(p, JSON.stringify(doc));
  const c = await loadCoreconfig({ path: p });
  t.same([c.ca?.toString(), c.cert?.toString(), c.key?.toString()], ['CA2', 'C2', 'K2']);
});

t.test('clear one-line errors', async (t) => {
  const one = (e: unknown): string => { const m = (e as Error).message; t.notMatch(m, /\n/); return m; };
  await t.rejects(loadCoreconfig({}), /neither --coreconfig nor --master/);
  await loadCoreconfig({ path: join(dir, 'missing') }).catch((e) => t.match(one(e), /missing: cannot read: ENOENT/));
  await loadCoreconfig({ path: yamlPath, context: 'nope' }).catch((e) => t.match(one(e), /context "nope" not found in contexts/));
  await loadCoreconfig({ path: yamlPath, context: 'ghost' }).catch((e) => t.match(one(e), /cluster "nope" not found in clusters/));
  await loadCoreconfig({ path: yamlPath, context: 'four' }).catch((e) => t.match(one(e), /needs both a client certificate and a client key/));
  await parseCoreconfig('a: [', 'bad.yaml').catch((e) => t.match(one(e), /bad\.yaml: not valid YAML or JSON/));
  await parseCoreconfig('kind: Config\n', 'n.yaml').catch((e) => t.match(one(e), /no current-context/));
  await t.rejects(parseCoreconfig(`current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c, cluster: {certificate-authority: nofile}}]\n`, join(dir, 'x.yaml')), /has no server/);
  await t.rejects(parseCoreconfig(`current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: "https://h:1", certificate-authority: nofile}}]\n`, join(dir, 'x.yaml')), /cannot read certificate-authority .*nofile: ENOENT/);
});
