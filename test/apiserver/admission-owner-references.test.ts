// OwnerReferencesPermissionEnforcement: changing ownerReferences needs `delete` on the object,
// setting blockOwnerDeletion needs `update` on the owner's finalizers; Kubernetes' messages.
// First the plugin alone with a recording authorizer (exact questions asked), then on the full
// server under --authorization-mode=Webhook with a fixture service that answers per verb.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { findResource } from '../../src/api/resources/registry.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { AuthorizationAttributes, AuthorizationResult } from '../../src/auth/authorizer.js';
import { AdmissionChain } from '../../src/daemons/apiserver/admission/chain.js';
import type { AdmissionAttributes, AdmissionOperation } from '../../src/daemons/apiserver/admission/types.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';
import { h2request, startApiserver } from '../helpers/apiserver.js';
import { sarWebhookServer } from '../helpers/webhook-server.js';

const PLUGIN = 'OwnerReferencesPermissionEnforcement';
const configmaps = findResource('', 'v1', 'configmaps')!;
const pods = findResource('', 'v1', 'pods')!;

const ref = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'apps/v1', kind: 'Deployment', name, uid: `uid-${name}`, ...extra });
const cm = (refs?: object[], data: Record<string, string> = {}): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'app', ...(refs ? { ownerReferences: refs } : {}) }, data }) as KubeObject;

function chainWith(decide: (a: AuthorizationAttributes) => AuthorizationResult) {
  const asked: AuthorizationAttributes[] = [];
  const chain = new AdmissionChain([PLUGIN], {
    store: undefined as unknown as ObjectStore,
    authorizer: { name: 'test', authorize: (a) => { asked.push(a); return decide(a); } },
  });
  const run = async (operation: AdmissionOperation, object: KubeObject, oldObject?: KubeObject, opts: { def?: typeof configmaps; subresource?: string; user?: boolean } = {}) => {
    const a: AdmissionAttributes = {
      operation, def: opts.def ?? configmaps, subresource: opts.subresource ?? '', namespace: 'app', name: 'cm', object,
      ...(oldObject ? { oldObject } : {}), dryRun: false,
      ...(opts.user === false ? {} : { request: { user: { name: 'writer', groups: ['system:authenticated'] }, version: 'v1' } }),
    };
    await chain.validate(a);
  };
  return { asked, run };
}

const allowAll = (): AuthorizationResult => ({ decision: 'allow', reason: '' });
const noDelete = (a: AuthorizationAttributes): AuthorizationResult => (a.verb === 'delete' ? { decision: 'noOpinion', reason: 'no delete for you' } : allowAll());
const noFinalizers = (a: AuthorizationAttributes): AuthorizationResult => (a.subresource === 'finalizers' ? { decision: 'noOpinion', reason: 'no finalizers' } : allowAll());

t.test('changing ownerReferences on update needs delete on the object; a create does not', async (t) => {
  const { asked, run } = chainWith(noDelete);
  await run('CREATE', cm([ref('d1')]));
  t.same(asked, [], 'a create with owner references asks nothing (no blocking reference)');
  await run('UPDATE', cm([ref('d1')], { a: '1' }), cm([ref('d1')]));
  t.same(asked, [], 'an update that keeps the references asks nothing');
  await t.rejects(run('UPDATE', cm([ref('d1'), ref('d2')]), cm([ref('d1')])), {
    code: 403, reason: 'Forbidden', message: 'configmaps "cm" is forbidden: cannot set an ownerRef on a resource you can\'t delete: no delete for you, <nil>',
  });
  t.match(asked[0], { user: { name: 'writer' }, verb: 'delete', isResourceRequest: true, namespace: 'app', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', name: 'cm' });
  await t.rejects(run('UPDATE', cm([]), cm([ref('d1')])), { code: 403 }, 'removing a reference is a change');
  await t.rejects(run('UPDATE', cm([ref('d1', { controller: true })]), cm([ref('d1')])), { code: 403 }, 'setting controller is a change');
  await t.rejects(run('UPDATE', cm([ref('d1', { controller: false })]), cm([ref('d1')])), { code: 403 }, 'unset and false differ, as Go compares pointers');
  await run('UPDATE', cm([ref('d1')]), cm([ref('d1')]), { user: false });
  t.pass('writes the server makes itself are not checked');
  const before = asked.length;
  await run('UPDATE', { ...cm([ref('x')]), kind: 'Pod' }, { ...cm([]), kind: 'Pod' }, { def: pods, subresource: 'status' });
  t.equal(asked.length, before, 'pods/status is exempt');
});

t.test('blockOwnerDeletion=true needs update on the owner\'s finalizers', async (t) => {
  const { asked, run } = chainWith(noFinalizers);
  await t.rejects(run('CREATE', cm([ref('d1', { blockOwnerDeletion: true })])), {
    code: 403, message: 'configmaps "cm" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: no finalizers, <nil>',
  });
  t.match(asked.at(-1), { verb: 'update', namespace: 'app', apiGroup: 'apps', apiVersion: 'v1', resource: 'deployments', subresource: 'finalizers', name: 'd1' });
  await run('CREATE', cm([ref('d1', { blockOwnerDeletion: false })]));
  t.pass('false needs nothing');
  const n = asked.length;
  await run('UPDATE', cm([ref('d1', { blockOwnerDeletion: true })], { x: 'y' }), cm([ref('d1', { blockOwnerDeletion: true })]));
  t.equal(asked.length, n, 'an unchanged blocking reference asks nothing');
  await t.rejects(run('UPDATE', cm([ref('d1', { blockOwnerDeletion: true })]), cm([ref('d1', { blockOwnerDeletion: false })])), { code: 403 }, 'false → true');
  t.equal(asked.at(-2)!.verb, 'delete', 'the object\'s delete is asked first');
  await t.rejects(run('CREATE', cm([{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u', blockOwnerDeletion: true }])), { code: 403 });
  t.match(asked.at(-1), { resource: 'nodes', namespace: '', subresource: 'finalizers', name: 'n1' }, 'a cluster-scoped owner is asked without a namespace');
  await t.rejects(run('CREATE', cm([{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'u', blockOwnerDeletion: true }])), {
    code: 403, message: 'configmaps "cm" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Widget: no matches for kind "Widget" in version "example.com/v1"',
  });
  const ok = chainWith(allowAll);
  await ok.run('CREATE', cm([ref('d1', { blockOwnerDeletion: true })]));
  t.pass('allowed with update on deployments/finalizers');
});

t.test('the plugin needs the authorizer', async (t) => {
  t.throws(() => new AdmissionChain([PLUGIN], { store: undefined as unknown as ObjectStore }), /OwnerReferencesPermissionEnforcement: missing authorizer/);
});

t.test('on the full server: the requesting user is asked about, refusals reach the client', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ownerrefs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const hook = await sarWebhookServer();
  t.teardown(() => hook.close());
  // writer: everything on configmaps in app but delete; update on deployments/finalizers of owner-ok only.
  hook.answer = (rv) => {
    const ra = rv.spec.resourceAttributes ?? {};
    if (rv.spec.user !== 'writer') return { allowed: false };
    if (ra.resource === 'configmaps' && ra.namespace === 'app' && ra.verb !== 'delete') return { allowed: true };
    if (ra.resource === 'deployments' && ra.subresource === 'finalizers' && ra.verb === 'update' && ra.name === 'owner-ok') return { allowed: true };
    return { allowed: false, reason: 'not granted' };
  };
  const config = join(dir, 'webhook.yaml');
  const b64 = (x: string): string => Buffer.from(x).toString('base64');
  await writeFile(config, [
    'apiVersion: v1', 'kind: Config', 'current-context: c',
    'clusters:', '- name: authz', '  cluster:', `    server: ${hook.url}`, `    certificate-authority-data: ${b64(hook.caPem)}`,
    'contexts:', '- name: c', '  context:', '    cluster: authz', '',
  ].join('\n'));
  const s = await startApiserver({ args: [
    '--authorization-mode=Webhook', `--authorization-webhook-config-file=${config}`, '--authorization-webhook-cache-unauthorized-ttl=0s',
    `--enable-admission-plugins=${PLUGIN}`, '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection',
  ] });
  t.teardown(() => s.stop());
  const [adminCert, adminKey] = await Promise.all([readFile(s.clientCertFile, 'utf8'), readFile(s.clientKeyFile, 'utf8')]);
  const writer = await s.issueClient('writer');
  const call = (who: { certPem: string; keyPem: string }, method: string, path: string, body?: unknown) => h2request(s.url, {
    method, path, ca: s.ca.certPem, cert: who.certPem, key: who.keyPem,
    ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  const admin = { certPem: adminCert, keyPem: adminKey };
  t.equal((await call(admin, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'app' } })).status, 201);
  const base = '/api/v1/namespaces/app/configmaps';
  const obj = (name: string, refs: unknown[]) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: refs } });

  t.equal((await call(writer, 'POST', base, obj('a', [ref('owner-no')]))).status, 201, 'a create may set owner references');
  let r = await call(writer, 'PUT', `${base}/a`, obj('a', [ref('owner-no'), ref('other')]));
  t.equal(r.status, 403, 'changing them without delete');
  t.equal(JSON.parse(r.body).message, 'configmaps "a" is forbidden: cannot set an ownerRef on a resource you can\'t delete: not granted, <nil>');
  r = await call(writer, 'POST', base, obj('b', [ref('owner-no', { blockOwnerDeletion: true })]));
  t.equal(r.status, 403, 'blocking an owner without its finalizers');
  t.equal(JSON.parse(r.body).message, 'configmaps "b" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: not granted, <nil>');
  t.equal((await call(writer, 'POST', base, obj('c', [ref('owner-ok', { blockOwnerDeletion: true })]))).status, 201, 'with update on deployments/finalizers');
  const asked = hook.reviews.map((x) => x.review.spec.resourceAttributes).find((ra) => ra?.subresource === 'finalizers' && ra.name === 'owner-ok');
  t.same(asked, { namespace: 'app', verb: 'update', group: 'apps', version: 'v1', resource: 'deployments', subresource: 'finalizers', name: 'owner-ok' });
  t.equal((await call(admin, 'PUT', `${base}/a`, obj('a', [ref('owner-no', { blockOwnerDeletion: true })]))).status, 200, 'system:masters may');
});
