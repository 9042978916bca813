// Encryption at rest through the whole API server: a Secret written over HTTPS is ciphertext in
// the embedded store (read raw after the server stops) and plaintext through the API.
import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';

t.test('secrets are encrypted in the store and readable through the API', async (t) => {
  const tmp = await mkdtemp(join(tmpdir(), 'corectl-enc-'));
  t.teardown(() => rm(tmp, { recursive: true, force: true }));
  const cfg = join(tmp, 'encryption.yaml');
  const key = Buffer.alloc(32, 7).toString('base64');
  await writeFile(cfg, [
    'apiVersion: apiserver.config.k8s.io/v1',
    'kind: EncryptionConfiguration',
    'resources:',
    '  - resources: [secrets]',
    '    providers:',
    `      - aescbc: { keys: [ { name: key1, secret: "${key}" } ] }`,
    '      - identity: {}',
  ].join('\n'));
  // Our own data dir (the last --data-dir wins), so the store outlives the helper's temp dir.
  const dataDir = join(tmp, 'data');
  const api = await startApiserver({ args: [`--experimental-encryption-provider-config=${cfg}`, `--data-dir=${dataDir}`] });
  const client = await connectClient(api);
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' }, stringData: { password: 'very-secret-text' } };
  const created = await client.request('POST', '/api/v1/namespaces/default/secrets', { body: secret });
  t.equal(created.status, 201, 'created');
  const got = await client.request('GET', '/api/v1/namespaces/default/secrets/s1');
  t.equal(Buffer.from(got.json.data.password, 'base64').toString(), 'very-secret-text', 'readable through the API');
  const cm = await client.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c1' }, data: { k: 'plain-config-text' } } });
  t.equal(cm.status, 201);
  client.close();
  await api.stop();

  const raw = await openLevelBackend({ dir: dataDir });
  t.teardown(() => raw.close());
  const s = await raw.get('/registry/secrets/default/s1');
  t.ok(s.kv, 'secret stored under its key');
  const bytes = s.kv!.value;
  t.ok(bytes.subarray(0, 64).toString('latin1').startsWith('k8s:enc:aescbc:v1:key1:'), 'value carries the provider prefix');
  t.notOk(bytes.includes(Buffer.from('very-secret-text')), 'no plaintext in the store');
  t.notOk(bytes.includes(Buffer.from(Buffer.from('very-secret-text').toString('base64'))), 'no base64 plaintext in the store');
  const c = await raw.get('/registry/configmaps/default/c1');
  t.ok(c.kv!.value.includes(Buffer.from('plain-config-text')), 'resources not named in the config stay plain');
});

t.test('an unreadable encryption config is a start-up error naming the option', async (t) => {
  await t.rejects(startApiserver({ args: ['--experimental-encryption-provider-config=/nonexistent/enc.yaml'] }),
    /--experimental-encryption-provider-config/);
});
