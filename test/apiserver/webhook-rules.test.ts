/**
 * The webhook plugins' pure parts: compiling a webhook (defaults), rule matching (operation,
 * group, version, resource/subresource, scope), matchPolicy Equivalent across served versions
 * and groups, the per-request index, version conversion of the objects, selectors, the review a
 * webhook is sent and the checks on its answer, and the status of a denial.
 */
import t from 'tap';
import { findResource } from '../../src/api/resources/registry.js';
import type { ResourceDefinition } from '../../src/api/resources/types.js';
import { compileWebhook, type Webhook } from '../../src/daemons/apiserver/admission/webhook/webhook.js';
import { NO_INVOCATIONS, RuleIndex, invocationFor, ruleMatches } from '../../src/daemons/apiserver/admission/webhook/rules.js';
import { equivalentTargets, fromTargetVersion, targetOf, toTargetVersion } from '../../src/daemons/apiserver/admission/webhook/versions.js';
import { matchesNamespaceSelector, matchesObjectSelector } from '../../src/daemons/apiserver/admission/webhook/selectors.js';
import { buildReview, verifyResponse, InvalidResponseError } from '../../src/daemons/apiserver/admission/webhook/review.js';
import { denial } from '../../src/daemons/apiserver/admission/webhook/invoke.js';
import { exemptFromWebhooks } from '../../src/daemons/apiserver/admission/webhook/dispatcher.js';
import type { AdmissionAttributes } from '../../src/daemons/apiserver/admission/types.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';

type Obj = Record<string, unknown>;
const def = (group: string, version: string, plural: string): ResourceDefinition => findResource(group, version, plural)!;
const pods = def('', 'v1', 'pods');
const namespaces = def('', 'v1', 'namespaces');
const configmaps = def('', 'v1', 'configmaps');
const deployments = def('apps', 'v1', 'deployments');
const extDeployments = def('extensions', 'v1beta1', 'deployments');
const cronjobs = def('batch', 'v1', 'cronjobs');

function hook(rules: Obj[], extra: Obj = {}): Webhook {
  return compileWebhook({ name: 'h.example.com', clientConfig: { url: 'https://127.0.0.1/' }, rules, sideEffects: 'None', admissionReviewVersions: ['v1'], ...extra }, 'cfg', 0, 'mutating');
}
const rule = (r: Obj): Obj => ({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], ...r });
const everything = (): true => true;

t.test('compiling a webhook: Kubernetes v1 defaults when fields are missing', async (t) => {
  const w = compileWebhook({ name: 'a.b.c', clientConfig: { service: { namespace: 'ns', name: 'svc' }, caBundle: Buffer.from('PEM').toString('base64') }, rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'] }] }, 'cfg', 2, 'mutating');
  t.equal(w.uid, 'cfg/2');
  t.equal(w.failOpen, false, 'failurePolicy Fail');
  t.equal(w.equivalent, true, 'matchPolicy Equivalent');
  t.equal(w.timeoutSeconds, 10);
  t.equal(w.reinvoke, false, 'reinvocationPolicy Never');
  t.equal(w.reviewVersion, undefined, 'no AdmissionReview version it accepts');
  t.same(w.client.service, { namespace: 'ns', name: 'svc', path: '', port: 443 });
  t.equal(w.client.caPem, 'PEM', 'caBundle decoded');
  t.same(w.rules[0]!.resources, [['pods', 'status']]);
  t.equal(w.rules[0]!.scope, '*');
  t.equal(w.namespaceSelector, undefined, 'an empty selector is no selector');
  const v = compileWebhook({ name: 'a.b.c', reinvocationPolicy: 'IfNeeded', admissionReviewVersions: ['v2', 'v1beta1', 'v1'] }, 'c', 0, 'validating');
  t.equal(v.reinvoke, false, 'validating webhooks are never reinvoked');
  t.equal(v.reviewVersion, 'v1beta1', 'the first version this server speaks');
});

t.test('rules: operation, group, version, resource and subresource, scope', async (t) => {
  const podT = targetOf(pods, 'v1', '');
  const statusT = targetOf(pods, 'v1', 'status');
  const nsT = targetOf(namespaces, 'v1', '');
  const deployT = targetOf(deployments, 'v1', '');
  const m = (r: Obj, op: 'CREATE' | 'UPDATE' | 'DELETE', target = podT, sub = ''): boolean => ruleMatches(hook([rule(r)]).rules[0]!, op, target, sub);
  t.ok(m({}, 'CREATE'), 'wildcards');
  t.notOk(m({ operations: ['UPDATE'] }, 'CREATE'));
  t.ok(m({ operations: ['UPDATE', 'DELETE'] }, 'DELETE'));
  t.notOk(m({ apiGroups: ['apps'] }, 'CREATE'), 'core pods are in group ""');
  t.ok(m({ apiGroups: [''] }, 'CREATE'));
  t.ok(m({ apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }, 'CREATE', deployT));
  t.notOk(m({ apiVersions: ['v1beta1'] }, 'CREATE', deployT));
  t.notOk(m({ resources: ['pods'] }, 'UPDATE', statusT, 'status'), '"pods" does not take pods/status');
  t.ok(m({ resources: ['pods/status'] }, 'UPDATE', statusT, 'status'));
  t.ok(m({ resources: ['pods/*'] }, 'UPDATE', statusT, 'status'));
  t.ok(m({ resources: ['*/status'] }, 'UPDATE', statusT, 'status'));
  t.notOk(m({ resources: ['*/status'] }, 'CREATE'), '"*/status" does not take pods');
  t.notOk(m({ resources: ['*'] }, 'UPDATE', statusT, 'status'), '"*" takes no subresource');
  t.ok(m({ resources: ['*/*'] }, 'UPDATE', statusT, 'status'));
  t.ok(m({ scope: 'Namespaced' }, 'CREATE'));
  t.notOk(m({ scope: 'Cluster' }, 'CREATE'));
  t.ok(m({ scope: 'Cluster' }, 'CREATE', nsT), 'namespaces are cluster-scoped');
  t.notOk(m({ scope: 'Namespaced' }, 'CREATE', nsT));
});

t.test('matchPolicy Equivalent: other served versions and groups of the same objects', async (t) => {
  const request = targetOf(deployments, 'v1', '');
  const extRule = rule({ apiGroups: ['extensions'], apiVersions: ['v1beta1'], resources: ['deployments'] });
  const served = (d: ResourceDefinition, v: string): boolean => !(d.group === 'extensions' && !servedExt) && !!v;
  let servedExt = true;
  const eq = (): ReturnType<typeof equivalentTargets> => equivalentTargets(deployments, 'v1', '', served);
  const inv = invocationFor(hook([extRule]), 'CREATE', request, '', eq);
  t.equal(inv?.target.def, extDeployments, 'called for extensions/v1beta1 deployments');
  t.same(inv?.target.kind, { group: 'extensions', version: 'v1beta1', kind: 'Deployment' });
  t.equal(invocationFor(hook([extRule], { matchPolicy: 'Exact' }), 'CREATE', request, '', eq), undefined, 'Exact: not called');
  servedExt = false;
  t.equal(invocationFor(hook([extRule]), 'CREATE', request, '', eq), undefined, 'a version not served is no equivalent');
  const own = invocationFor(hook([rule({ apiGroups: ['apps'] })]), 'CREATE', request, '', eq);
  t.equal(own?.target, request, 'a direct match wins');

  const cron = invocationFor(hook([rule({ apiGroups: ['batch'], apiVersions: ['v1beta1'] })]), 'CREATE', targetOf(cronjobs, 'v1', ''), '', () => equivalentTargets(cronjobs, 'v1', '', everything));
  t.equal(cron?.target.version, 'v1beta1', 'another served version of one resource');
  const status = equivalentTargets(deployments, 'v1', 'status', everything);
  t.same(status.map((x) => [x.resource, x.kind.kind]), [[{ group: 'extensions', version: 'v1beta1', resource: 'deployments' }, 'Deployment']], 'deployments/status: the other group\'s status');
  t.same(equivalentTargets(deployments, 'v1', 'scale', everything), [], 'only where the subresource is served (the extensions view has no scale)');
});

t.test('the index: worked out once per generation, nothing when nothing matches', async (t) => {
  const idx = new RuleIndex(everything);
  const hooks = [hook([rule({ resources: ['configmaps'] })])];
  const a = idx.invocations(hooks, 1, 'CREATE', configmaps, 'v1', '', undefined);
  t.equal(a.length, 1);
  t.equal(idx.invocations(hooks, 1, 'CREATE', configmaps, 'v1', '', undefined), a, 'the same list again');
  t.equal(idx.invocations(hooks, 1, 'CREATE', pods, 'v1', '', undefined), NO_INVOCATIONS, 'no match: the shared empty list');
  t.equal(idx.invocations([], 2, 'CREATE', configmaps, 'v1', '', undefined), NO_INVOCATIONS, 'a new generation is worked out again');
  const ev = idx.invocations([hook([rule({ resources: ['pods/eviction'] })])], 3, 'CREATE', pods, 'v1', 'eviction', { apiVersion: 'policy/v1', kind: 'Eviction' });
  t.same(ev[0]?.target.kind, { group: 'policy', version: 'v1', kind: 'Eviction' }, "a subresource's own object gives the kind");
});

t.test('objects in the webhook version and back', async (t) => {
  const obj = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'ns' }, spec: { replicas: 2, selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } };
  const ext = targetOf(extDeployments, 'v1beta1', '');
  const inExt = toTargetVersion(deployments, obj, ext);
  t.equal(inExt.apiVersion, 'extensions/v1beta1');
  t.equal(inExt.kind, 'Deployment');
  const back = fromTargetVersion(deployments, { ...inExt, metadata: { ...inExt.metadata, labels: { x: 'y' } } }, ext);
  t.equal(back.apiVersion, 'apps/v1');
  t.same(back.metadata?.labels, { x: 'y' }, 'a change made in the other version comes back');
  const own = targetOf(configmaps, 'v1', '');
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } };
  t.same(toTargetVersion(configmaps, cm, own), cm, 'the same version: the same content');
  const scale = { apiVersion: 'autoscaling/v1', kind: 'Scale', spec: { replicas: 1 } };
  t.equal(toTargetVersion(deployments, scale, targetOf(deployments, 'v1', 'scale')), scale, 'a Scale is not converted');
});

t.test('selectors', async (t) => {
  const sel = compileWebhook({ objectSelector: { matchLabels: { hook: 'on' } }, namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] } }, 'c', 0, 'validating');
  const attrs = (x: Partial<AdmissionAttributes>): AdmissionAttributes => ({ operation: 'CREATE', def: configmaps, subresource: '', namespace: 'ns', name: 'n', dryRun: false, ...x });
  t.ok(matchesObjectSelector(sel.objectSelector, attrs({ object: { metadata: { labels: { hook: 'on' } } } })));
  t.notOk(matchesObjectSelector(sel.objectSelector, attrs({ object: { metadata: {} } })));
  t.ok(matchesObjectSelector(sel.objectSelector, attrs({ operation: 'UPDATE', object: { metadata: {} }, oldObject: { metadata: { labels: { hook: 'on' } } } })), 'or the old object');
  t.ok(matchesObjectSelector(undefined, attrs({})), 'no selector: everything');
  const store = {} as ObjectStore; // not read: the answers below need no namespace
  t.equal(matchesNamespaceSelector(store, sel.namespaceSelector, attrs({ def: namespaces, namespace: '', name: 'x', object: { metadata: { labels: { env: 'prod' } } } })), true, 'a Namespace by its own labels');
  t.equal(matchesNamespaceSelector(store, sel.namespaceSelector, attrs({ def: namespaces, namespace: '', name: 'x', object: { metadata: {} } })), false);
  t.equal(matchesNamespaceSelector(store, sel.namespaceSelector, attrs({ def: def('rbac.authorization.k8s.io', 'v1', 'clusterroles'), namespace: '' })), true, 'other cluster-scoped resources always');
});

t.test('the review sent and the answer checked', async (t) => {
  const w = hook([rule({})]);
  const requested = targetOf(configmaps, 'v1', '');
  const a: AdmissionAttributes = {
    operation: 'DELETE', def: configmaps, subresource: '', namespace: 'ns', name: 'cm', dryRun: true,
    oldObject: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' } },
    request: { user: { name: 'alice', groups: ['g'], uid: 'u1' }, version: 'v1' }, deleteOptions: { gracePeriodSeconds: 0, propagationPolicy: 'Background' },
  };
  const r = buildReview(a, { webhook: w, target: requested }, requested, undefined, a.oldObject);
  const body = JSON.parse(r.body) as { apiVersion: string; request: Obj };
  t.equal(body.apiVersion, 'admission.k8s.io/v1');
  t.match(body.request, {
    uid: r.uid, kind: { group: '', version: 'v1', kind: 'ConfigMap' }, resource: { group: '', version: 'v1', resource: 'configmaps' },
    requestKind: { kind: 'ConfigMap' }, name: 'cm', namespace: 'ns', operation: 'DELETE', object: null, oldObject: { metadata: { name: 'cm' } },
    userInfo: { username: 'alice', uid: 'u1', groups: ['g'] }, dryRun: true,
    options: { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', gracePeriodSeconds: 0, propagationPolicy: 'Background', dryRun: ['All'] },
  });
  t.notOk('subResource' in body.request, 'no subresource: omitted');

  const ok = (response: Obj, extra: Obj = {}): Obj => ({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.uid, ...response }, ...extra });
  t.same(verifyResponse(ok({ allowed: true, warnings: ['w'] }), r.uid, false, 'v1'), { allowed: true, warnings: ['w'] });
  const patch = Buffer.from('[]').toString('base64');
  t.match(verifyResponse(ok({ allowed: true, patch, patchType: 'JSONPatch' }), r.uid, true, 'v1'), { patchType: 'JSONPatch' });
  const bad: Array<[unknown, boolean, RegExp]> = [
    [ok({ allowed: true }, { response: undefined }), false, /^webhook response was absent$/],
    [ok({ allowed: true, uid: 'other' }), false, /^expected response\.uid="[^"]+", got "other"$/],
    [ok({ allowed: true }, { apiVersion: 'admission.k8s.io/v1beta1' }), false, /^expected webhook response of admission\.k8s\.io\/v1, Kind=AdmissionReview/],
    [ok({ allowed: true, patch }), true, /^webhook returned response\.patch but not response\.patchType$/],
    [ok({ allowed: true, patchType: 'JSONPatch' }), true, /^webhook returned response\.patchType but not response\.patch$/],
    [ok({ allowed: true, patch, patchType: 'JSONPatch' }), false, /^validating webhook may not return response\.patch$/],
  ];
  for (const [b, mutating, msg] of bad) t.throws(() => verifyResponse(b, r.uid, mutating, 'v1'), Object.assign(new InvalidResponseError(), { message: msg }));
  t.same(verifyResponse({ response: { allowed: false, uid: 'whatever' } }, r.uid, false, 'v1beta1'), { allowed: false, warnings: [] }, 'v1beta1: not checked further');
});

t.test('a denial: the status the webhook gave, with Kubernetes defaults', async (t) => {
  const d = denial('deny.example.com', { code: 403, message: 'not today', reason: 'Forbidden' });
  t.same([d.code, d.reason, d.message], [403, 'Forbidden', 'admission webhook "deny.example.com" denied the request: not today']);
  const bare = denial('deny.example.com', undefined);
  t.same([bare.code, bare.status.status, bare.message], [400, 'Failure', 'admission webhook "deny.example.com" denied the request without explanation']);
  t.equal(denial('x.y.z', { code: 200, reason: 'Nope' }).code, 400, 'a code below 400 becomes 400');
  t.equal(denial('x.y.z', { reason: 'Nope' }).message, 'admission webhook "x.y.z" denied the request: Nope', 'the reason when no message');
});

t.test('the configuration kinds themselves are exempt', async (t) => {
  t.ok(exemptFromWebhooks(def('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations')));
  t.ok(exemptFromWebhooks(def('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations')));
  t.notOk(exemptFromWebhooks(pods));
});
