import t from 'tap';
import { startWith, waitFor } from './fixtures/controller-harness.js';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { type ResourceRef } from '../../src/client/rest-client.js';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, exportJWK, importSPKI, jwtVerify, decodeProtectedHeader } from 'jose';
import { newServiceAccountController } from '../../src/daemons/controller-manager/controllers/serviceaccount.js';
import {
  LEGACY_ISSUER, legacyToken, newServiceAccountTokenController, signerFromPem,
} from '../../src/daemons/controller-manager/controllers/serviceaccount-token.js';

const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const inNs = (resource: string, namespace: string): ResourceRef => ({ group: '', version: 'v1', resource, namespace });

type Dict = Record<string, unknown>;


const gone = async (f: () => Promise<unknown>): Promise<boolean> => {
  try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
};

const FAKE_CA = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

t.test('signing keys: RSA → RS256, EC P-256 → ES256; the token verifies with the public key', async (t) => {
  for (const [type, alg] of [['rsa', 'RS256'], ['ec', 'ES256']] as const) {
    const { privateKey, publicKey } = type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = privateKey.export({ type: type === 'rsa' ? 'pkcs1' : 'sec1', format: 'pem' });
    const signer = signerFromPem(pem);
    t.equal(signer.alg, alg);
    const token = await legacyToken(signer, 'ns1', 'sa1', 'uid-1', 'sa1-token');
    t.equal(decodeProtectedHeader(token).kid, signer.kid);
    const jwk = await exportJWK(publicKey);
    const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: [{ ...jwk, kid: signer.kid, alg }] }), { issuer: LEGACY_ISSUER });
    t.equal(payload.sub, 'system:serviceaccount:ns1:sa1');
    t.equal(payload['kubernetes.io/serviceaccount/service-account.uid'], 'uid-1');
  }
});

t.test('service account and token controllers against a real API server', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-satoken-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  await writeFile(join(dir, 'ca.crt'), FAKE_CA);
  const c = await startWith([newServiceAccountController(), newServiceAccountTokenController()],
    [`--service-account-private-key-file=${join(dir, 'sa.key')}`, `--root-ca-file=${join(dir, 'ca.crt')}`]);
  t.teardown(() => c.stop());

  await t.test('a new namespace gets a default service account, re-created when deleted', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
    const sa = await waitFor('default SA', async () => c.client.get(inNs('serviceaccounts', 'team'), 'default'));
    await c.client.delete(inNs('serviceaccounts', 'team'), 'default');
    const again = await waitFor('re-created', async () => {
      const x = await c.client.get(inNs('serviceaccounts', 'team'), 'default');
      return x.metadata?.uid !== sa.metadata?.uid && x;
    });
    t.ok(again.metadata?.uid, 'a new default service account');
    t.ok(await waitFor('default SA in kube-system', async () => c.client.get(inNs('serviceaccounts', 'kube-system'), 'default')), 'existing namespaces too');
  });

  await t.test('a token secret gets a verifiable JWT, ca.crt and namespace', async (t) => {
    const sa = await c.client.create(inNs('serviceaccounts', 'team'), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'builder' } });
    await c.client.create(inNs('secrets', 'team'), {
      apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token',
      metadata: { name: 'builder-token', annotations: { 'kubernetes.io/service-account.name': 'builder' } },
    });
    const secret = await waitFor('token', async (): Promise<KubeObject | false> => {
      const s = await c.client.get(inNs('secrets', 'team'), 'builder-token');
      return Boolean((s.data as Dict | undefined)?.token) && s;
    });
    const data = secret.data as Record<string, string>;
    const dec = (k: string): string => Buffer.from(data[k] ?? '', 'base64').toString('utf8');
    t.equal(dec('namespace'), 'team');
    t.equal(dec('ca.crt'), FAKE_CA);
    t.equal(secret.metadata?.annotations?.['kubernetes.io/service-account.uid'], sa.metadata?.uid);
    const key = await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }).toString(), 'RS256');
    const { payload, protectedHeader } = await jwtVerify(dec('token'), key, { issuer: 'kubernetes/serviceaccount' });
    t.equal(protectedHeader.alg, 'RS256');
    t.match(payload, {
      iss: 'kubernetes/serviceaccount', sub: 'system:serviceaccount:team:builder',
      'kubernetes.io/serviceaccount/namespace': 'team', 'kubernetes.io/serviceaccount/secret.name': 'builder-token',
      'kubernetes.io/serviceaccount/service-account.name': 'builder', 'kubernetes.io/serviceaccount/service-account.uid': sa.metadata?.uid,
    });
  });

  await t.test('token secrets of a deleted or missing service account are deleted', async (t) => {
    await c.client.delete(inNs('serviceaccounts', 'team'), 'builder');
    await waitFor('builder token deleted', () => gone(() => c.client.get(inNs('secrets', 'team'), 'builder-token')));
    await c.client.create(inNs('secrets', 'team'), {
      apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token',
      metadata: { name: 'nobody-token', annotations: { 'kubernetes.io/service-account.name': 'nobody' } },
    });
    await waitFor('orphan token deleted', () => gone(() => c.client.get(inNs('secrets', 'team'), 'nobody-token')));
    t.pass('both deleted');
  });

  await t.test('no token secret is created per service account by default', async (t) => {
    const list = await c.client.list(inNs('secrets', 'team'));
    t.equal(list.items.length, 0);
  });
});

t.test('legacy mode creates one token secret per service account', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-satoken-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'sec1', format: 'pem' }));
  const c = await startWith([newServiceAccountTokenController({ autoCreateSecrets: true })], [`--service-account-private-key-file=${join(dir, 'sa.key')}`]);
  t.teardown(() => c.stop());
  await c.client.create(inNs('serviceaccounts', 'default'), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'legacy' } });
  const sa = await waitFor('secret listed in the SA', async () => {
    const x = await c.client.get(inNs('serviceaccounts', 'default'), 'legacy');
    return ((x as Dict).secrets as unknown[] | undefined)?.length && x;
  });
  const name = (((sa as Dict).secrets as Dict[])[0]).name as string;
  t.match(name, /^legacy-token-[0-9a-f]{5}$/);
  const secret = await c.client.get(inNs('secrets', 'default'), name);
  t.equal(secret.type, 'kubernetes.io/service-account-token');
  t.equal(decodeProtectedHeader(Buffer.from((secret.data as Record<string, string>).token, 'base64').toString()).alg, 'ES256');
  const tokens = (await c.client.list(inNs('secrets', 'default'))).items.filter((s) => s.type === 'kubernetes.io/service-account-token');
  t.equal(tokens.length, 1, 'exactly one');
});
