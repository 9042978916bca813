// Encryption at rest: providers (with a NaCl known-answer vector for secretbox), the
// EncryptionConfiguration parser, and secrets through the object store on a real LevelDB.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { parseEncryptionConfig, type EncryptionConfig } from '../../src/storage/encryption/config.js';
import { secretboxOpen, secretboxSeal } from '../../src/storage/encryption/secretbox.js';
import type { Backend } from '../../src/storage/interface.js';
import type { ObjectRef } from '../../src/storage/object-store-types.js';

const KEY1 = Buffer.alloc(32, 1).toString('base64');
const KEY2 = Buffer.alloc(32, 2).toString('base64');
const PLAIN = 'top-secret-password-42';
const secretRef = (name: string): ObjectRef => ({ group: '', resource: 'secrets', namespace: 'default', name });
const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, stringData: { password: PLAIN } });

function config(providers: string): EncryptionConfig {
  return parseEncryptionConfig(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
${providers}`);
}
const aescbc = (name: string, key: string) => `      - aescbc:\n          keys:\n            - name: ${name}\n              secret: ${key}\n`;
const aesgcm = (name: string, key: string) => `      - aesgcm:\n          keys:\n            - name: ${name}\n              secret: ${key}\n`;
const secretbox = (name: string, key: string) => `      - secretbox:\n          keys:\n            - name: ${name}\n              secret: ${key}\n`;
const identity = '      - identity: {}\n';

async function levelBackend(t: Test): Promise<Backend> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-enc-'));
  const backend = await openLevelBackend({ dir });
  t.teardown(async () => { await backend.close(); await rm(dir, { recursive: true, force: true }); });
  return backend;
}

function storeWith(t: Test, backend: Backend, cfg: EncryptionConfig, cache = false) {
  const store = createObjectStore({
    backendFor: () => backend,
    transformer: (g, r) => cfg.transformerFor(g, r),
    watchCache: { enabled: cache, defaultSize: 100, sizes: {} },
  });
  t.teardown(() => store.close());
  return store;
}

t.test('secretbox matches the NaCl known-answer vector', async (t) => {
  const key = Buffer.from('1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389', 'hex');
  const nonce = Buffer.from('69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37', 'hex');
  const m = Buffer.from('be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f937763848645e0705', 'hex');
  const box = 'f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5';
  const sealed = secretboxSeal(m, nonce, key);
  t.equal(sealed.toString('hex'), box);
  t.same(secretboxOpen(sealed, nonce, key), m);
  sealed[40]! ^= 1;
  t.equal(secretboxOpen(sealed, nonce, key), undefined, 'tampering is detected');
  t.same(secretboxOpen(secretboxSeal(Buffer.alloc(0), nonce, key), nonce, key), Buffer.alloc(0), 'empty message');
});

t.test('config parsing', async (t) => {
  const legacy = parseEncryptionConfig(`kind: EncryptionConfig\napiVersion: v1\nresources:\n  - resources: [secrets, '*.apps']\n    providers:\n      - identity: {}\n`);
  t.ok(legacy.transformerFor('', 'secrets'));
  t.ok(legacy.transformerFor('apps', 'deployments'), 'group wildcard');
  t.equal(legacy.transformerFor('', 'configmaps'), undefined, 'unnamed resources are stored as is');
  const all = config(identity.replace('identity', 'identity')).rules;
  t.equal(all.length, 1);
  t.throws(() => parseEncryptionConfig('kind: Pod\napiVersion: v1\n'), /EncryptionConfiguration/);
  t.throws(() => config(aescbc('k', Buffer.alloc(7).toString('base64'))), /AES key must be 16, 24 or 32 bytes/);
  t.throws(() => config(secretbox('k', Buffer.alloc(16).toString('base64'))), /32 bytes/);
  t.throws(() => config('      - kms: { name: x }\n'), /kms provider is not supported/);
  t.throws(() => config('      - rot13: {}\n'), /unknown provider/);
  t.throws(() => config(aescbc('a', 'not base64!')), /base64/);
  const star = parseEncryptionConfig(`apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: ['*.*']\n    providers:\n${aesgcm('g', KEY1)}`);
  t.ok(star.transformerFor('example.com', 'widgets'), "'*.*' matches everything");
});

for (const [name, provider, prefix] of [
  ['aescbc', aescbc('key1', KEY1), 'k8s:enc:aescbc:v1:key1:'],
  ['aesgcm', aesgcm('key1', KEY1), 'k8s:enc:aesgcm:v1:key1:'],
  ['secretbox', secretbox('key1', KEY1), 'k8s:enc:secretbox:v1:key1:'],
] as const) {
  t.test(`${name}: unreadable in the backend, readable through the store`, async (t) => {
    const backend = await levelBackend(t);
    const store = storeWith(t, backend, config(provider + identity), name === 'aesgcm');
    const created = await store.create(secretRef('s'), secret('s'));
    const raw = (await backend.get('/registry/secrets/default/s')).kv!.value;
    t.ok(raw.subarray(0, prefix.length).toString() === prefix, `value starts with ${prefix}`);
    t.notOk(raw.includes(PLAIN), 'no plaintext in the stored value');
    t.notOk(raw.includes('"name"'), 'no JSON in the stored value');
    t.same(await store.get(secretRef('s')), created);
    const listed = await store.list({ group: '', resource: 'secrets', namespace: 'default' });
    t.equal((listed.items[0]!['stringData'] as { password: string }).password, PLAIN);
    // A watch from no resourceVersion starts with the stored objects, decrypted.
    const w = store.watch({ group: '', resource: 'secrets', namespace: 'default' });
    try {
      for await (const e of w) {
        t.equal(e.type, 'ADDED');
        t.equal((e.object['stringData'] as { password: string }).password, PLAIN, 'the watch decrypts its initial objects');
        break;
      }
    } finally {
      w.close();
    }
    // Configmaps are not named in the config: stored as is.
    await store.create({ group: '', resource: 'configmaps', namespace: 'default', name: 'c' }, { metadata: { name: 'c' }, data: { k: PLAIN } });
    t.ok((await backend.get('/registry/configmaps/default/c')).kv!.value.includes(PLAIN));
  });
}

t.test('key rotation: a new first key keeps old values readable; identity first still reads', async (t) => {
  const backend = await levelBackend(t);
  const s1 = storeWith(t, backend, config(aescbc('key1', KEY1)));
  await s1.create(secretRef('old'), secret('old'));
  const rotated = storeWith(t, backend, config(aescbc('key2', KEY2) + aescbc('key1', KEY1)));
  t.equal((await rotated.get(secretRef('old'))).metadata?.name, 'old', 'old key still decrypts');
  await rotated.create(secretRef('new'), secret('new'));
  t.match((await backend.get('/registry/secrets/default/new')).kv!.value.toString('latin1'), /^k8s:enc:aescbc:v1:key2:/, 'new writes use the new first key');
  // Rewriting an old value re-encrypts it with the new key.
  await rotated.guaranteedUpdate(secretRef('old'), (o) => ({ ...o!, type: 'Opaque' }));
  t.match((await backend.get('/registry/secrets/default/old')).kv!.value.toString('latin1'), /^k8s:enc:aescbc:v1:key2:/);
  // Decrypting with identity first (turning encryption off) still reads encrypted values.
  const off = storeWith(t, backend, config(identity + aescbc('key2', KEY2) + aescbc('key1', KEY1)));
  t.equal((await off.get(secretRef('old'))).metadata?.name, 'old');
  await off.create(secretRef('plain'), secret('plain'));
  t.ok((await backend.get('/registry/secrets/default/plain')).kv!.value.includes(PLAIN), 'identity first writes plaintext');
  t.equal((await off.get(secretRef('plain'))).metadata?.name, 'plain', 'plaintext is readable while identity is configured');
  await t.rejects(rotated.get(secretRef('plain')), { code: 'Internal', message: /identity provider is not configured/ },
    'without identity in the list, plaintext is refused');
  // Without the right key, reads fail clearly instead of returning garbage.
  const wrong = storeWith(t, backend, config(aescbc('key3', Buffer.alloc(32, 3).toString('base64'))));
  await t.rejects(wrong.get(secretRef('new')), { code: 'Internal', message: /decrypt/ });
});

t.test('aesgcm binds the value to its key (authenticated data)', async (t) => {
  const backend = await levelBackend(t);
  const store = storeWith(t, backend, config(aesgcm('k', KEY1)));
  await store.create(secretRef('a'), secret('a'));
  const value = (await backend.get('/registry/secrets/default/a')).kv!.value;
  await backend.create('/registry/secrets/default/copied', value);
  await t.rejects(store.get(secretRef('copied')), { code: 'Internal' }, 'a value moved to another key does not decrypt');
});
