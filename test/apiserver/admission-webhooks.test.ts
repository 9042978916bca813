/**
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook against a real API server and real
 * HTTPS webhook servers started here (a CA and a serving certificate for 127.0.0.1 and
 * hooks.webhooks.svc). Each webhook answers by its path; every review it gets is recorded.
 */
import * as https from 'node:https';
import { tlsWebhookServer, type TlsWebhookServer } from '../helpers/webhook-server.js';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { createCA, issueCert } from '../../src/util/pki.js';
import { webhookConfigSource } from '../../src/daemons/apiserver/admission/webhook/config-source.js';
import { WebhookCaller } from '../../src/daemons/apiserver/admission/webhook/invoke.js';
import { compileWebhook } from '../../src/daemons/apiserver/admission/webhook/webhook.js';
import { targetOf } from '../../src/daemons/apiserver/admission/webhook/versions.js';
import { findResource } from '../../src/api/resources/registry.js';
import { isApiError } from '../../src/api/meta/status.js';
import { readFile } from 'node:fs/promises';
import type { TLSSocket } from 'node:tls';
import { startApiserver, freePort, runExpectingStartFailure, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';
import { waitFor } from '../helpers/wait-for.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
const GROUP_PATH = '/apis/admissionregistration.k8s.io/v1';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const jsonPatch = (ops: unknown[]): Obj => ({ allowed: true, patchType: 'JSONPatch', patch: b64(JSON.stringify(ops)) });

let a: StartedApiserver;
let c: RestClient;
let hooks: TlsWebhookServer;
let caBundle: string;
let otherCaBundle: string;

t.before(async () => {
  hooks = await tlsWebhookServer();
  caBundle = hooks.caBundle;
  otherCaBundle = b64((await createCA({ commonName: 'another-ca' })).certPem);
  a = await startApiserver();
  c = await connectClient(a);
});
t.teardown(async () => { c?.close(); await a?.stop(); await hooks?.close(); });

const url = (path: string): string => hooks.url(path);
const rule = (resources: string[], operations = ['*'], extra: Obj = {}): Obj => ({ operations, apiGroups: ['*'], apiVersions: ['*'], resources, ...extra });

function hook(name: string, path: string, rules: Obj[], extra: Obj = {}): Obj {
  return { name, clientConfig: { url: url(path), caBundle }, rules, sideEffects: 'None', admissionReviewVersions: ['v1'], ...extra };
}

type Flavor = 'mutating' | 'validating';
const plural = (f: Flavor): string => `${f}webhookconfigurations`;
const kindOf = (f: Flavor): string => (f === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration');

/** Creates a configuration and waits until the server's plugin has it (and removes it when the test ends). */
async function configure(t: Test, flavor: Flavor, name: string, webhooks: Obj[]): Promise<void> {
  const r = await c.request('POST', `${GROUP_PATH}/${plural(flavor)}`, { body: { apiVersion: 'admissionregistration.k8s.io/v1', kind: kindOf(flavor), metadata: { name }, webhooks } });
  if (r.status !== 201) throw new Error(`${name}: ${r.status} ${r.body.toString()}`);
  await seen(flavor, name, r.json.metadata.resourceVersion);
  t.teardown(() => unconfigure(flavor, name));
}

async function seen(flavor: Flavor, name: string, rv: string): Promise<void> {
  await waitFor(`${name} in effect`, () => webhookConfigSource(a.parts!.store, flavor).has(name, rv));
}

async function unconfigure(flavor: Flavor, name: string): Promise<void> {
  await c.request('DELETE', `${GROUP_PATH}/${plural(flavor)}/${name}`);
  await waitFor(`${name} gone`, () => !webhookConfigSource(a.parts!.store, flavor).has(name));
}

async function namespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  const r = await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } } });
  if (r.status !== 201) throw new Error(`namespace ${name}: ${r.status} ${r.body.toString()}`);
}

const cm = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = { k: 'v' }): Obj => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data });
const createCm = (ns: string, body: Obj, query = ''): ReturnType<RestClient['request']> => c.request('POST', `/api/v1/namespaces/${ns}/configmaps${query}`, { body });
const reviewsAt = (path: string): Any[] => hooks.reviews.filter((r) => r.path.split('?')[0] === path).map((r) => r.request);

t.test('allow: the review carries the request, the user and the object', async (t) => {
  await namespace('allow');
  await configure(t, 'validating', 'allow', [hook('allow.webhooks.test', '/allow', [rule(['configmaps'], ['CREATE'])])]);
  const r = await createCm('allow', cm('one'));
  t.equal(r.status, 201, r.body.toString());
  const [rev] = reviewsAt('/allow');
  t.match(hooks.reviews.find((x) => x.path.startsWith('/allow'))?.path, /^\/allow\?timeout=10s$/, 'the timeout is in the query');
  t.match(rev, {
    kind: { group: '', version: 'v1', kind: 'ConfigMap' }, resource: { group: '', version: 'v1', resource: 'configmaps' },
    requestKind: { group: '', version: 'v1', kind: 'ConfigMap' }, requestResource: { group: '', version: 'v1', resource: 'configmaps' },
    name: 'one', namespace: 'allow', operation: 'CREATE', userInfo: { username: 'admin' },
    object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'one', namespace: 'allow' }, data: { k: 'v' } },
    oldObject: null, dryRun: false, options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
  });
  t.ok(rev.userInfo.groups.includes('system:masters'), 'the groups of the user');
  t.match(rev.uid, /^[0-9a-f-]{36}$/);
});

t.test('deny: the webhook status, its code and message; nothing is stored', async (t) => {
  await namespace('deny');
  hooks.answers.set('/deny', () => ({ allowed: false, status: { code: 403, reason: 'Forbidden', message: 'configmaps are not welcome' } }));
  hooks.answers.set('/deny-bare', () => ({ allowed: false }));
  await configure(t, 'validating', 'deny', [
    hook('deny.webhooks.test', '/deny', [rule(['configmaps'], ['CREATE'])], { objectSelector: { matchLabels: { deny: 'coded' } } }),
    hook('bare.webhooks.test', '/deny-bare', [rule(['configmaps'], ['CREATE'])], { objectSelector: { matchLabels: { deny: 'bare' } } }),
  ]);
  const r = await createCm('deny', cm('no', { deny: 'coded' }));
  t.equal(r.status, 403);
  t.match(r.json, { kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message: 'admission webhook "deny.webhooks.test" denied the request: configmaps are not welcome' });
  t.equal((await c.request('GET', '/api/v1/namespaces/deny/configmaps/no')).status, 404, 'not stored');
  const bare = await createCm('deny', cm('bare', { deny: 'bare' }));
  t.equal(bare.status, 400, 'no code: 400');
  t.equal(bare.json.message, 'admission webhook "bare.webhooks.test" denied the request without explanation');
});

t.test('mutating: a JSONPatch answer changes the stored object', async (t) => {
  await namespace('mutate');
  hooks.answers.set('/label', (req) => jsonPatch([{ op: 'add', path: '/metadata/labels/added-by', value: 'webhook' }, { op: 'replace', path: '/data/k', value: `${req.object.data.k}!` }]));
  await configure(t, 'mutating', 'label', [hook('label.webhooks.test', '/label', [rule(['configmaps'], ['CREATE'])])]);
  const r = await createCm('mutate', cm('m', { own: 'yes' }));
  t.equal(r.status, 201, r.body.toString());
  const got = (await c.request('GET', '/api/v1/namespaces/mutate/configmaps/m')).json;
  t.same(got.metadata.labels, { own: 'yes', 'added-by': 'webhook' });
  t.same(got.data, { k: 'v!' });
});

t.test('failurePolicy: an unreachable webhook and one that times out', async (t) => {
  await namespace('failures');
  const closed = await freePort();
  hooks.answers.set('/slow', () => 'hang');
  const unreachable = { clientConfig: { url: `https://127.0.0.1:${closed}/`, caBundle } };
  await configure(t, 'validating', 'failures', [
    hook('closed.fail.webhooks.test', '/', [rule(['configmaps'], ['CREATE'])], { ...unreachable, objectSelector: { matchLabels: { case: 'closed-fail' } } }),
    hook('closed.ignore.webhooks.test', '/', [rule(['configmaps'], ['CREATE'])], { ...unreachable, failurePolicy: 'Ignore', objectSelector: { matchLabels: { case: 'closed-ignore' } } }),
    hook('slow.fail.webhooks.test', '/slow', [rule(['configmaps'], ['CREATE'])], { timeoutSeconds: 1, objectSelector: { matchLabels: { case: 'slow-fail' } } }),
    hook('slow.ignore.webhooks.test', '/slow', [rule(['configmaps'], ['CREATE'])], { timeoutSeconds: 1, failurePolicy: 'Ignore', objectSelector: { matchLabels: { case: 'slow-ignore' } } }),
    hook('tls.fail.webhooks.test', '/allow', [rule(['configmaps'], ['CREATE'])], { clientConfig: { url: url('/allow'), caBundle: otherCaBundle }, objectSelector: { matchLabels: { case: 'tls-fail' } } }),
    hook('status.fail.webhooks.test', '/teapot', [rule(['configmaps'], ['CREATE'])], { objectSelector: { matchLabels: { case: 'status-fail' } } }),
  ]);
  hooks.answers.set('/teapot', () => ({ status: 418, body: 'short and stout' }));
  const r1 = await createCm('failures', cm('a', { case: 'closed-fail' }));
  t.equal(r1.status, 500);
  t.match(r1.json, { reason: 'InternalError', code: 500 });
  t.equal(r1.json.message, `Internal error occurred: failed calling webhook "closed.fail.webhooks.test": failed to call webhook: Post "https://127.0.0.1:${closed}/?timeout=10s": dial tcp 127.0.0.1:${closed}: connect: connection refused`);
  t.equal((await c.request('GET', '/api/v1/namespaces/failures/configmaps/a')).status, 404, 'not stored');
  t.equal((await createCm('failures', cm('b', { case: 'closed-ignore' }))).status, 201, 'Ignore: the write goes through');
  const r3 = await createCm('failures', cm('c', { case: 'slow-fail' }));
  t.equal(r3.status, 500);
  t.equal(r3.json.message, `Internal error occurred: failed calling webhook "slow.fail.webhooks.test": failed to call webhook: Post "${url('/slow')}?timeout=1s": context deadline exceeded`);
  t.equal((await createCm('failures', cm('d', { case: 'slow-ignore' }))).status, 201, 'Ignore: a timeout is skipped');
  const r5 = await createCm('failures', cm('e', { case: 'tls-fail' }));
  t.equal(r5.status, 500);
  t.match(r5.json.message, /failed calling webhook "tls\.fail\.webhooks\.test": failed to call webhook: Post ".*": tls: failed to verify certificate: x509: certificate signed by unknown authority$/, 'TLS checked against caBundle');
  const r6 = await createCm('failures', cm('f', { case: 'status-fail' }));
  t.equal(r6.status, 500);
  t.match(r6.json.message, /the server responded with the status code 418 but did not return more information$/);
});

t.test('rules: operation, resource, subresource, scope', async (t) => {
  await namespace('rules');
  await configure(t, 'validating', 'rules', [
    hook('update.webhooks.test', '/r-update', [rule(['configmaps'], ['UPDATE'])]),
    hook('secrets.webhooks.test', '/r-secrets', [rule(['secrets'])]),
    hook('podstatus.webhooks.test', '/r-podstatus', [rule(['pods/status'], ['UPDATE'])]),
    hook('scale.webhooks.test', '/r-scale', [rule(['deployments/scale'])]),
    hook('eviction.webhooks.test', '/r-eviction', [rule(['pods/eviction'], ['CREATE'])]),
    hook('cluster.webhooks.test', '/r-cluster', [rule(['*'], ['CREATE'], { scope: 'Cluster' })]),
    hook('namespaced.webhooks.test', '/r-namespaced', [rule(['namespaces', 'configmaps'], ['CREATE'], { scope: 'Namespaced' })]),
  ]);
  t.equal((await createCm('rules', cm('x'))).status, 201);
  t.equal(reviewsAt('/r-update').length, 0, 'an UPDATE rule: not called on create');
  t.equal(reviewsAt('/r-secrets').length, 0, 'a secrets rule: not called for configmaps');
  t.equal(reviewsAt('/r-cluster').length, 0, 'a Cluster rule: not called for a namespaced resource');
  t.equal(reviewsAt('/r-namespaced').length, 1, 'a Namespaced rule: called for one');
  const cur = (await c.request('GET', '/api/v1/namespaces/rules/configmaps/x')).json;
  t.equal((await c.request('PUT', '/api/v1/namespaces/rules/configmaps/x', { body: { ...cur, data: { k: 'w' } } })).status, 200);
  t.match(reviewsAt('/r-update'), [{ operation: 'UPDATE', object: { data: { k: 'w' } }, oldObject: { data: { k: 'v' } }, options: { kind: 'UpdateOptions' } }], 'UPDATE: object and oldObject');

  await namespace('rules-cluster');
  t.match(reviewsAt('/r-cluster'), [{ kind: { kind: 'Namespace' }, name: 'rules-cluster' }], 'a Cluster rule: called for namespaces');
  t.equal(reviewsAt('/r-namespaced').length, 1, 'a Namespaced rule: not called for namespaces');

  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
  t.equal((await c.request('POST', '/api/v1/namespaces/rules/pods', { body: pod })).status, 201);
  t.equal(reviewsAt('/r-podstatus').length, 0, 'pods/status: not called for a pod create');
  const p = (await c.request('GET', '/api/v1/namespaces/rules/pods/p')).json;
  const st = await c.request('PUT', '/api/v1/namespaces/rules/pods/p/status', { body: { ...p, status: { ...p.status, phase: 'Running' } } });
  t.equal(st.status, 200, st.body.toString());
  t.match(reviewsAt('/r-podstatus'), [{ subResource: 'status', requestSubResource: 'status', kind: { kind: 'Pod' }, object: { status: { phase: 'Running' } } }], 'pods/status: called for the status write');

  const deploy = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 1, selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } };
  t.equal((await c.request('POST', '/apis/apps/v1/namespaces/rules/deployments', { body: deploy })).status, 201);
  t.equal(reviewsAt('/r-scale').length, 0, 'deployments/scale: not called for the deployment');
  const sc = await c.request('PATCH', '/apis/apps/v1/namespaces/rules/deployments/d/scale', { body: { spec: { replicas: 3 } }, contentType: 'application/merge-patch+json' });
  t.equal(sc.status, 200, sc.body.toString());
  t.match(reviewsAt('/r-scale'), [{
    operation: 'UPDATE', subResource: 'scale', kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, resource: { group: 'apps', resource: 'deployments' },
    object: { kind: 'Scale', spec: { replicas: 3 } }, oldObject: { kind: 'Scale', spec: { replicas: 1 } },
  }], 'deployments/scale: the Scale');

  const ev = await c.request('POST', '/api/v1/namespaces/rules/pods/p/eviction', { body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p' } } });
  t.equal(ev.status, 201, ev.body.toString());
  t.match(reviewsAt('/r-eviction'), [{ operation: 'CREATE', subResource: 'eviction', kind: { group: 'policy', version: 'v1', kind: 'Eviction' }, name: 'p', object: { kind: 'Eviction' } }], 'pods/eviction: the Eviction');
});

t.test('matchPolicy: Equivalent calls a webhook for another served version, in that version', async (t) => {
  await namespace('equiv');
  hooks.answers.set('/equiv', () => jsonPatch([{ op: 'add', path: '/metadata/labels', value: { 'seen-as': 'v1beta1' } }]));
  const v1beta1 = rule(['cronjobs'], ['CREATE'], { apiGroups: ['batch'], apiVersions: ['v1beta1'] });
  await configure(t, 'mutating', 'equivalent', [
    hook('equiv.webhooks.test', '/equiv', [v1beta1]),
    hook('exact.webhooks.test', '/exact', [v1beta1], { matchPolicy: 'Exact' }),
  ]);
  const cron = { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'c' }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'i' }] } } } } } };
  const r = await c.request('POST', '/apis/batch/v1/namespaces/equiv/cronjobs', { body: cron });
  t.equal(r.status, 201, r.body.toString());
  t.match(reviewsAt('/equiv'), [{
    kind: { group: 'batch', version: 'v1beta1', kind: 'CronJob' }, resource: { group: 'batch', version: 'v1beta1', resource: 'cronjobs' },
    requestKind: { group: 'batch', version: 'v1', kind: 'CronJob' }, requestResource: { group: 'batch', version: 'v1', resource: 'cronjobs' },
    object: { apiVersion: 'batch/v1beta1', kind: 'CronJob' },
  }]);
  t.equal(reviewsAt('/exact').length, 0, 'matchPolicy Exact: not called');
  t.same(r.json.metadata.labels, { 'seen-as': 'v1beta1' }, 'the patch made in v1beta1 is kept');
});

t.test('namespaceSelector and objectSelector', async (t) => {
  await namespace('sel-on', { webhooks: 'on' });
  await namespace('sel-off');
  await configure(t, 'validating', 'selectors', [
    hook('ns.webhooks.test', '/s-ns', [rule(['configmaps'], ['CREATE'])], { namespaceSelector: { matchLabels: { webhooks: 'on' } } }),
    hook('obj.webhooks.test', '/s-obj', [rule(['configmaps'], ['CREATE'])], { objectSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] } }),
  ]);
  await createCm('sel-on', cm('x1'));
  await createCm('sel-off', cm('x2', { team: 'a' }));
  await createCm('sel-off', cm('x3', { team: 'b' }));
  t.same(reviewsAt('/s-ns').map((r) => r.name), ['x1'], 'only in the labelled namespace');
  t.same(reviewsAt('/s-obj').map((r) => r.name), ['x2'], 'only for the labelled object');
});

t.test('dry run: matching webhooks see it; one with side effects fails the request', async (t) => {
  await namespace('dry');
  await configure(t, 'validating', 'dry', [hook('dry.webhooks.test', '/dry', [rule(['configmaps'], ['CREATE'])], { sideEffects: 'NoneOnDryRun' })]);
  const r = await createCm('dry', cm('d'), '?dryRun=All');
  t.equal(r.status, 201, r.body.toString());
  t.match(reviewsAt('/dry'), [{ dryRun: true, options: { dryRun: ['All'] } }]);
  t.equal((await c.request('GET', '/api/v1/namespaces/dry/configmaps/d')).status, 404, 'nothing stored');

  // A configuration written under older rules (sideEffects Unknown is refused on create now).
  const name = 'side-effects';
  const stored = await a.parts!.store.create({ group: 'admissionregistration.k8s.io', resource: 'validatingwebhookconfigurations', namespace: '', name }, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name, uid: 'c0ffee00-0000-4000-8000-000000000001' },
    webhooks: [{ ...hook('effects.webhooks.test', '/effects', [rule(['configmaps'], ['CREATE'])]), sideEffects: 'Unknown', failurePolicy: 'Ignore', matchPolicy: 'Equivalent', timeoutSeconds: 10 }],
  });
  await seen('validating', name, stored.metadata!.resourceVersion!);
  t.teardown(() => unconfigure('validating', name));
  const refused = await createCm('dry', cm('e'), '?dryRun=All');
  t.equal(refused.status, 400);
  t.equal(refused.json.message, 'admission webhook "effects.webhooks.test" does not support dry run', 'whatever its failurePolicy');
  t.equal(reviewsAt('/effects').length, 0, 'not called');
  t.equal((await createCm('dry', cm('f'))).status, 201, 'a real write calls it');
  t.equal(reviewsAt('/effects').length, 1);
});

t.test('warnings become Warning headers', async (t) => {
  await namespace('warn');
  hooks.answers.set('/warn', () => ({ allowed: true, warnings: ['mind the gap', 'second "quoted"'] }));
  await configure(t, 'validating', 'warn', [hook('warn.webhooks.test', '/warn', [rule(['configmaps'], ['CREATE'])])]);
  const r = await createCm('warn', cm('w'));
  t.equal(r.status, 201);
  const w = r.headers.warning;
  t.same(Array.isArray(w) ? w : String(w).split(/, (?=299)/), ['299 - "mind the gap"', '299 - "second \\"quoted\\""']);
  hooks.answers.set('/warn', () => ({ allowed: false, status: { message: 'no' }, warnings: ['why not'] }));
  const denied = await createCm('warn', cm('w2'));
  t.equal(denied.status, 400);
  t.equal(String(denied.headers.warning), '299 - "why not"', 'a denial carries its warnings too');
});

t.test('reinvocation: an IfNeeded webhook is called again after a later one changed the object', async (t) => {
  await namespace('again');
  hooks.answers.set('/first', (req) => (req.object.metadata.annotations?.first ? { allowed: true } : jsonPatch([{ op: 'add', path: '/metadata/annotations', value: { first: 'seen' } }])));
  hooks.answers.set('/second', () => jsonPatch([{ op: 'add', path: '/metadata/labels/second', value: 'yes' }]));
  // Configurations run by name: a-first before b-second.
  await configure(t, 'mutating', 'b-second', [hook('second.webhooks.test', '/second', [rule(['configmaps'], ['CREATE'])])]);
  await configure(t, 'mutating', 'a-first', [
    hook('first.webhooks.test', '/first', [rule(['configmaps'], ['CREATE'])], { reinvocationPolicy: 'IfNeeded' }),
    hook('never.webhooks.test', '/never', [rule(['configmaps'], ['CREATE'])]),
  ]);
  const r = await createCm('again', cm('r', {}));
  t.equal(r.status, 201, r.body.toString());
  const first = reviewsAt('/first');
  t.equal(first.length, 2, 'called twice');
  t.notOk(first[0].object.metadata.labels?.second, 'first round: before the second webhook');
  t.equal(first[1].object.metadata.labels.second, 'yes', 'second round: sees the later change');
  t.equal(reviewsAt('/never').length, 1, 'reinvocationPolicy Never: once');
  t.equal(reviewsAt('/second').length, 1);
  const got = (await c.request('GET', '/api/v1/namespaces/again/configmaps/r')).json;
  t.same([got.metadata.annotations, got.metadata.labels], [{ first: 'seen' }, { second: 'yes' }]);
});

t.test('DELETE: oldObject is the stored object, object is null; a denial keeps it', async (t) => {
  await namespace('del');
  await createCm('del', cm('keep', { protect: 'yes' }));
  await createCm('del', cm('go'));
  hooks.answers.set('/delete', (req) => (req.oldObject.metadata.labels?.protect ? { allowed: false, status: { code: 403, message: 'protected' } } : { allowed: true }));
  await configure(t, 'validating', 'delete', [hook('delete.webhooks.test', '/delete', [rule(['configmaps'], ['DELETE'])])]);
  const r = await c.request('DELETE', '/api/v1/namespaces/del/configmaps/go?gracePeriodSeconds=0');
  t.equal(r.status, 200);
  t.match(reviewsAt('/delete'), [{ operation: 'DELETE', name: 'go', namespace: 'del', object: null, oldObject: { metadata: { name: 'go' }, data: { k: 'v' } }, options: { kind: 'DeleteOptions', gracePeriodSeconds: 0 } }]);
  const kept = await c.request('DELETE', '/api/v1/namespaces/del/configmaps/keep');
  t.equal(kept.status, 403);
  t.equal(kept.json.message, 'admission webhook "delete.webhooks.test" denied the request: protected');
  t.equal((await c.request('GET', '/api/v1/namespaces/del/configmaps/keep')).status, 200, 'still there');
});

t.test('a service-backed webhook: its endpoint is dialled, TLS checked against <service>.<namespace>.svc', async (t) => {
  await namespace('webhooks');
  const svc = (name: string): Obj => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ name: 'https', port: 443, targetPort: 8443 }] } });
  const eps = (name: string): Obj => ({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name, namespace: 'webhooks' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'https', port: hooks.port }] }] });
  for (const name of ['hooks', 'other']) {
    t.equal((await c.request('POST', '/api/v1/namespaces/webhooks/services', { body: svc(name) })).status, 201);
    // The test's webhook listens on loopback, an address Endpoints validation refuses (as
    // Kubernetes'): the endpoint goes into storage directly.
    await a.parts!.store.create({ resource: 'endpoints', group: '', namespace: 'webhooks', name }, eps(name) as never);
  }
  await namespace('svc-test');
  const viaService = (name: string, service: string, label: string): Obj => ({
    name, clientConfig: { service: { namespace: 'webhooks', name: service, path: '/via-service' }, caBundle },
    rules: [rule(['configmaps'], ['CREATE'])], sideEffects: 'None', admissionReviewVersions: ['v1'], objectSelector: { matchLabels: { via: label } },
  });
  await configure(t, 'validating', 'service', [viaService('svc.webhooks.test', 'hooks', 'hooks'), viaService('wrongname.webhooks.test', 'other', 'other')]);
  const r = await createCm('svc-test', cm('s', { via: 'hooks' }));
  t.equal(r.status, 201, r.body.toString());
  t.equal(reviewsAt('/via-service').length, 1, 'called through the service');
  t.equal(hooks.reviews.at(-1)?.path, '/via-service?timeout=10s');
  const wrong = await createCm('svc-test', cm('o', { via: 'other' }));
  t.equal(wrong.status, 500, 'the certificate does not name other.webhooks.svc');
  t.match(wrong.json.message, /^Internal error occurred: failed calling webhook "wrongname\.webhooks\.test": failed to call webhook: Post "https:\/\/other\.webhooks\.svc:443\/via-service\?timeout=10s": tls: failed to verify certificate/);
});

t.test('the webhook configurations themselves never reach a webhook', async (t) => {
  hooks.answers.set('/everything', () => ({ allowed: false, status: { code: 403, message: 'no' } }));
  await configure(t, 'validating', 'deny-everything', [hook('everything.webhooks.test', '/everything', [rule(['*/*'])], { namespaceSelector: {}, objectSelector: {} })]);
  await configure(t, 'mutating', 'mutate-everything', [hook('everything-m.webhooks.test', '/everything', [rule(['*/*'])])]);
  const before = reviewsAt('/everything').length;
  const extra = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'extra' }, webhooks: [hook('extra.webhooks.test', '/extra', [rule(['secrets'])])] };
  const created = await c.request('POST', `${GROUP_PATH}/validatingwebhookconfigurations`, { body: extra });
  t.equal(created.status, 201, created.body.toString());
  const got = created.json;
  t.equal((await c.request('PUT', `${GROUP_PATH}/validatingwebhookconfigurations/extra`, { body: { ...got, metadata: { ...got.metadata, labels: { x: 'y' } } } })).status, 200);
  t.equal((await c.request('DELETE', `${GROUP_PATH}/validatingwebhookconfigurations/extra`)).status, 200);
  t.equal(reviewsAt('/everything').length, before, 'no review for the configuration kinds');
  t.equal((await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'blocked' } } })).status, 403, 'while everything else is refused');
  // The teardowns remove both configurations: deleting them is never refused either.
});

/**
 * A webhook that allows everything but requires a client certificate from the API server's CA
 * (as the first server's admin certificate is); records each caller's common name.
 */
async function mtlsWebhook(t: Test): Promise<{ port: number; peers: string[] }> {
  const serving = await issueCert({ ca: a.ca, commonName: 'mtls', ips: ['127.0.0.1'], usages: 'server' });
  const peers: string[] = [];
  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem, requestCert: true, rejectUnauthorized: true, ca: await readFile(a.caFile) }, (req, res) => {
    peers.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const { request } = JSON.parse(Buffer.concat(chunks).toString()) as { request: { uid: string } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: request.uid, allowed: true } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });
  const port = (server.address() as AddressInfo).port;
  return { port, peers };
}

t.test("a configured client certificate is presented to webhooks (the caller, as --proxy-client-cert-file sets it)", async (t) => {
  const { port, peers } = await mtlsWebhook(t);
  const configmaps = findResource('', 'v1', 'configmaps')!;
  const webhook = compileWebhook({ name: 'mtls.webhooks.test', clientConfig: { url: `https://127.0.0.1:${port}/`, caBundle: b64(a.ca.certPem) }, sideEffects: 'None', admissionReviewVersions: ['v1'] }, 'mtls', 0, 'validating');
  const target = targetOf(configmaps, 'v1', '');
  const attrs = { operation: 'CREATE' as const, def: configmaps, subresource: '', namespace: 'ns', name: 'x', dryRun: false, object: cm('x') };
  const withCert = new WebhookCaller({ store: a.parts!.store, webhookClientCert: { cert: await readFile(a.clientCertFile), key: await readFile(a.clientKeyFile) } });
  t.match(await withCert.call(attrs, { webhook, target }, target, attrs.object, undefined), { allowed: true });
  t.same(peers, ['admin'], 'the webhook saw the client certificate');
  const without = new WebhookCaller({ store: a.parts!.store });
  const failure = await without.call(attrs, { webhook, target }, target, attrs.object, undefined).then(() => undefined, (e: unknown) => e);
  t.ok(isApiError(failure, 'InternalError') && /^Internal error occurred: failed calling webhook "mtls\.webhooks\.test": failed to call webhook: /.test(failure.message), 'no certificate: the call fails');
});

t.test('--proxy-client-cert-file and --proxy-client-key-file: the server presents that certificate to webhooks', async (t) => {
  const { port, peers } = await mtlsWebhook(t);
  // A second server whose outbound identity is the first server's admin client certificate.
  const b = await startApiserver({ args: [`--proxy-client-cert-file=${a.clientCertFile}`, `--proxy-client-key-file=${a.clientKeyFile}`] });
  const cb = await connectClient(b);
  t.teardown(async () => { cb.close(); await b.stop(); });
  const webhooks = [{
    name: 'mtls.webhooks.test', clientConfig: { url: `https://127.0.0.1:${port}/`, caBundle: b64(a.ca.certPem) },
    rules: [rule(['configmaps'], ['CREATE'])], sideEffects: 'None', admissionReviewVersions: ['v1'],
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } },
  }];
  const r = await cb.request('POST', `${GROUP_PATH}/validatingwebhookconfigurations`, { body: { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'mtls' }, webhooks } });
  t.equal(r.status, 201, r.body.toString());
  await waitFor('mtls in effect', () => webhookConfigSource(b.parts!.store, 'validating').has('mtls', r.json.metadata.resourceVersion));
  const created = await cb.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('via-mtls') });
  t.equal(created.status, 201, created.body.toString());
  t.same(peers, ['admin'], 'the webhook saw the configured client certificate');
});

t.test('--proxy-client-cert-file without its key, or an unreadable one, stops the start with one line', async (t) => {
  const { code, stderr: captured } = await runExpectingStartFailure(['--secure-port=0', '--proxy-client-cert-file=/tmp/x.crt']);
  t.equal(code, 1);
  t.match(captured, /^apiserver: --proxy-client-cert-file: needs --proxy-client-key-file as well/);
  t.equal(captured.trim().split('\n').length, 1, 'one line');
  // A file that cannot be read stops the start too (not every webhook call later).
  const missing = await runExpectingStartFailure(['--secure-port=0', '--proxy-client-cert-file=/nonexistent/p.crt', '--proxy-client-key-file=/nonexistent/p.key']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^apiserver: --proxy-client-cert-file: cannot read \/nonexistent\/p\.crt/);
  t.equal(missing.stderr.trim().split('\n').length, 1, 'one line');
});
