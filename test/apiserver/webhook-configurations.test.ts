/**
 * admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and ValidatingWebhookConfiguration
 * through the real API server: Kubernetes' v1 defaults, each validation rule with its field path,
 * the refusal of CEL match conditions, update and patch with generation, list and delete, the
 * table kubectl prints, discovery, and a create round trip of the Kubernetes HEAD fixture.
 * (No webhook is called here: these tests check the resources only.)
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { validateWebhooks } from '../../src/api/resources/admissionregistration/webhook-spec.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const GV = '/apis/admissionregistration.k8s.io/v1';
const MWC = `${GV}/mutatingwebhookconfigurations`;
const VWC = `${GV}/validatingwebhookconfigurations`;
const TBL = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
const FIXTURES = [join(process.cwd(), '..', 'shared', 'k8s-testdata', 'HEAD'), '/work/shared/k8s-testdata/HEAD'].find((d) => existsSync(d));

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

/** A minimal valid webhook; `extra` replaces fields (undefined removes one). */
function hook(name: string, extra: Obj = {}): Obj {
  const w: Obj = {
    name,
    clientConfig: { service: { namespace: 'default', name: 'hooks', path: '/validate' } },
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    ...extra,
  };
  for (const k of Object.keys(w)) if (w[k] === undefined) delete w[k];
  return w;
}

function config(kind: 'Mutating' | 'Validating', name: string, webhooks: Obj[]): Obj {
  return { apiVersion: 'admissionregistration.k8s.io/v1', kind: `${kind}WebhookConfiguration`, metadata: { name }, webhooks };
}

const causesOf = (r: Reply): Array<{ field: string; reason: string; message: string }> => r.json?.details?.causes ?? [];

t.test('create fills the v1 defaults; sideEffects and admissionReviewVersions have none', async (t) => {
  const created = await c.request('POST', MWC, { body: config('Mutating', 'defaults', [hook('a.example.com')]) });
  t.equal(created.status, 201, JSON.stringify(created.json?.message));
  const got = await c.request('GET', `${MWC}/defaults`);
  t.equal(got.status, 200);
  const w: Any = got.json.webhooks[0];
  t.match(w, {
    failurePolicy: 'Fail', matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {},
    timeoutSeconds: 10, reinvocationPolicy: 'Never', sideEffects: 'None', admissionReviewVersions: ['v1'],
  });
  t.same(w.rules[0].scope, '*', 'rule scope defaults to *');
  t.same(w.clientConfig.service, { namespace: 'default', name: 'hooks', path: '/validate', port: 443 }, 'service port defaults to 443');
  t.equal(got.json.metadata.generation, 1);
  t.equal(got.json.metadata.namespace, undefined, 'cluster-scoped');

  const v = await c.request('POST', VWC, { body: config('Validating', 'defaults', [hook('a.example.com', { clientConfig: { url: 'https://hooks.example.com:8443/check' } })]) });
  t.equal(v.status, 201, JSON.stringify(v.json?.message));
  t.match(v.json.webhooks[0], { failurePolicy: 'Fail', matchPolicy: 'Equivalent', timeoutSeconds: 10, namespaceSelector: {}, objectSelector: {} });
  t.notOk('reinvocationPolicy' in v.json.webhooks[0], 'validating webhooks have no reinvocationPolicy');

  const kept = await c.request('POST', VWC, { body: config('Validating', 'kept', [hook('a.example.com', { failurePolicy: 'Ignore', matchPolicy: 'Exact', timeoutSeconds: 3 })]) });
  t.match(kept.json.webhooks[0], { failurePolicy: 'Ignore', matchPolicy: 'Exact', timeoutSeconds: 3 }, 'given values stay');

  const noSide = await c.request('POST', VWC, { body: config('Validating', 'noside', [hook('a.example.com', { sideEffects: undefined, admissionReviewVersions: undefined })]) });
  t.equal(noSide.status, 422);
  t.equal(noSide.json.reason, 'Invalid');
  t.same(causesOf(noSide).map((x) => [x.field, x.reason, x.message]), [
    ['webhooks[0].sideEffects', 'FieldValueRequired', 'Required value: must specify one of None, NoneOnDryRun'],
    ['webhooks[0].admissionReviewVersions', 'FieldValueRequired', 'Required value: must specify one of v1, v1beta1'],
  ]);
});

/** Each case: the webhook fields to set, and the causes expected (field, reason, message pattern). */
const cases: Array<{ what: string; kind?: 'Mutating' | 'Validating'; webhooks: Obj[]; causes: Array<[string, string, RegExp | string]> }> = [
  { what: 'name required', webhooks: [hook('')], causes: [['webhooks[0].name', 'FieldValueRequired', 'Required value']] },
  { what: 'name with two segments', webhooks: [hook('example.com')], causes: [['webhooks[0].name', 'FieldValueInvalid', 'Invalid value: "example.com": should be a domain with at least three segments separated by dots']] },
  { what: 'name not a subdomain', webhooks: [hook('Bad_Name.example.com')], causes: [['webhooks[0].name', 'FieldValueInvalid', /lowercase RFC 1123 subdomain/]] },
  { what: 'duplicate names', webhooks: [hook('a.example.com'), hook('a.example.com')], causes: [['webhooks[1].name', 'FieldValueDuplicate', 'Duplicate value: "a.example.com"']] },
  { what: 'review versions without v1 or v1beta1', webhooks: [hook('a.example.com', { admissionReviewVersions: ['v2'] })],
    causes: [['webhooks[0].admissionReviewVersions', 'FieldValueInvalid', /must include at least one of v1, v1beta1$/]] },
  { what: 'duplicate review version', webhooks: [hook('a.example.com', { admissionReviewVersions: ['v1', 'v1'] })],
    causes: [['webhooks[0].admissionReviewVersions[1]', 'FieldValueInvalid', 'Invalid value: "v1": duplicate version']] },
  { what: 'review version not a DNS-1035 label', webhooks: [hook('a.example.com', { admissionReviewVersions: ['v1', 'V_2'] })],
    causes: [['webhooks[0].admissionReviewVersions[1]', 'FieldValueInvalid', /DNS-1035 label/]] },
  { what: 'sideEffects Some refused in v1', webhooks: [hook('a.example.com', { sideEffects: 'Some' })],
    causes: [['webhooks[0].sideEffects', 'FieldValueNotSupported', 'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"']] },
  { what: 'timeout 0', webhooks: [hook('a.example.com', { timeoutSeconds: 0 })], causes: [['webhooks[0].timeoutSeconds', 'FieldValueInvalid', 'Invalid value: 0: the timeout value must be between 1 and 30 seconds']] },
  { what: 'timeout 31', webhooks: [hook('a.example.com', { timeoutSeconds: 31 })], causes: [['webhooks[0].timeoutSeconds', 'FieldValueInvalid', /between 1 and 30 seconds/]] },
  { what: 'failurePolicy', webhooks: [hook('a.example.com', { failurePolicy: 'Maybe' })], causes: [['webhooks[0].failurePolicy', 'FieldValueNotSupported', 'Unsupported value: "Maybe": supported values: "Fail", "Ignore"']] },
  { what: 'matchPolicy', webhooks: [hook('a.example.com', { matchPolicy: 'Loose' })], causes: [['webhooks[0].matchPolicy', 'FieldValueNotSupported', 'Unsupported value: "Loose": supported values: "Equivalent", "Exact"']] },
  { what: 'reinvocationPolicy', kind: 'Mutating', webhooks: [hook('a.example.com', { reinvocationPolicy: 'Always' })],
    causes: [['webhooks[0].reinvocationPolicy', 'FieldValueNotSupported', 'Unsupported value: "Always": supported values: "IfNeeded", "Never"']] },
  { what: 'neither url nor service', webhooks: [hook('a.example.com', { clientConfig: {} })], causes: [['webhooks[0].clientConfig', 'FieldValueRequired', 'Required value: exactly one of url or service is required']] },
  { what: 'both url and service', webhooks: [hook('a.example.com', { clientConfig: { url: 'https://h.example.com', service: { namespace: 'default', name: 'x' } } })],
    causes: [['webhooks[0].clientConfig', 'FieldValueRequired', 'Required value: exactly one of url or service is required']] },
  { what: 'http url', webhooks: [hook('a.example.com', { clientConfig: { url: 'http://h.example.com/x' } })],
    causes: [['webhooks[0].clientConfig.url', 'FieldValueInvalid', `Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`]] },
  { what: 'url without scheme or host', webhooks: [hook('a.example.com', { clientConfig: { url: 'example.com/x' } })], causes: [
    ['webhooks[0].clientConfig.url', 'FieldValueInvalid', /^Invalid value: "": 'https' is the only allowed URL scheme/],
    ['webhooks[0].clientConfig.url', 'FieldValueInvalid', 'Invalid value: "": host must be provided; desired format: https://host[/path]']] },
  { what: 'url with user info', webhooks: [hook('a.example.com', { clientConfig: { url: 'https://me:pw@h.example.com/' } })],
    causes: [['webhooks[0].clientConfig.url', 'FieldValueInvalid', 'Invalid value: "me:pw": user information is not permitted in the URL']] },
  { what: 'url with fragment', webhooks: [hook('a.example.com', { clientConfig: { url: 'https://h.example.com/x#top' } })],
    causes: [['webhooks[0].clientConfig.url', 'FieldValueInvalid', 'Invalid value: "top": fragments are not permitted in the URL']] },
  { what: 'url with query', webhooks: [hook('a.example.com', { clientConfig: { url: 'https://h.example.com/x?a=b' } })],
    causes: [['webhooks[0].clientConfig.url', 'FieldValueInvalid', 'Invalid value: "a=b": query parameters are not permitted in the URL']] },
  { what: 'url that does not parse', webhooks: [hook('a.example.com', { clientConfig: { url: 'https://h example.com/' } })],
    causes: [['webhooks[0].clientConfig.url', 'FieldValueRequired', 'Required value: url must be a valid URL: parse "https://h example.com/": invalid character " " in host name; desired format: https://host[/path]']] },
  { what: 'service without name and namespace', webhooks: [hook('a.example.com', { clientConfig: { service: { port: 0 } } })], causes: [
    ['webhooks[0].clientConfig.service.name', 'FieldValueRequired', 'Required value: service name is required'],
    ['webhooks[0].clientConfig.service.namespace', 'FieldValueRequired', 'Required value: service namespace is required'],
    ['webhooks[0].clientConfig.service.port', 'FieldValueInvalid', 'Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive']] },
  { what: 'service path without leading slash', webhooks: [hook('a.example.com', { clientConfig: { service: { namespace: 'd', name: 'x', path: 'validate' } } })],
    causes: [['webhooks[0].clientConfig.service.path', 'FieldValueInvalid', `Invalid value: "validate": must start with a '/'`]] },
  { what: 'service path with an empty segment', webhooks: [hook('a.example.com', { clientConfig: { service: { namespace: 'd', name: 'x', path: '/a//b' } } })],
    causes: [['webhooks[0].clientConfig.service.path', 'FieldValueInvalid', 'Invalid value: "/a//b": segment[1] may not be empty']] },
  { what: 'service path segment not a subdomain', webhooks: [hook('a.example.com', { clientConfig: { service: { namespace: 'd', name: 'x', path: '/Validate' } } })],
    causes: [['webhooks[0].clientConfig.service.path', 'FieldValueInvalid', /^Invalid value: "\/Validate": segment\[0\]: a lowercase RFC 1123 subdomain/]] },
  { what: 'caBundle not base64', webhooks: [hook('a.example.com', { clientConfig: { url: 'https://h.example.com', caBundle: 'not base64!' } })],
    causes: [['webhooks[0].clientConfig.caBundle', 'FieldValueInvalid', /must be base64-encoded bytes/]] },
  { what: 'rule without operations, groups, versions, resources', webhooks: [hook('a.example.com', { rules: [{}] })], causes: [
    ['webhooks[0].rules[0].operations', 'FieldValueRequired', 'Required value'],
    ['webhooks[0].rules[0].apiGroups', 'FieldValueRequired', 'Required value'],
    ['webhooks[0].rules[0].apiVersions', 'FieldValueRequired', 'Required value'],
    ['webhooks[0].rules[0].resources', 'FieldValueRequired', 'Required value']] },
  { what: 'unknown operation and * mixed in', webhooks: [hook('a.example.com', { rules: [{ operations: ['*', 'PATCH'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] })], causes: [
    ['webhooks[0].rules[0].operations', 'FieldValueInvalid', /if '\*' is present, must not specify other operations$/],
    ['webhooks[0].rules[0].operations[1]', 'FieldValueNotSupported', 'Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"']] },
  { what: '* mixed into groups and versions, an empty version', webhooks: [hook('a.example.com', { rules: [{ operations: ['CREATE'], apiGroups: ['*', 'apps'], apiVersions: ['*', ''], resources: ['pods'] }] })], causes: [
    ['webhooks[0].rules[0].apiGroups', 'FieldValueInvalid', /if '\*' is present, must not specify other API groups$/],
    ['webhooks[0].rules[0].apiVersions', 'FieldValueInvalid', /if '\*' is present, must not specify other API versions$/],
    ['webhooks[0].rules[0].apiVersions[1]', 'FieldValueRequired', 'Required value']] },
  { what: '*/* with other resources', webhooks: [hook('a.example.com', { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['*/*', 'pods'] }] })],
    causes: [['webhooks[0].rules[0].resources', 'FieldValueInvalid', /if '\*\/\*' is present, must not specify other resources$/]] },
  { what: '* with a plain resource', webhooks: [hook('a.example.com', { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['*', 'pods'] }] })],
    causes: [['webhooks[0].rules[0].resources', 'FieldValueInvalid', /if '\*' is present, must not specify other resources without subresources$/]] },
  { what: 'pods/* then pods/status, */status then pods/status', webhooks: [hook('a.example.com', { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/*', 'pods/status', '*/scale', 'deployments/scale', ''] }] })], causes: [
    ['webhooks[0].rules[0].resources[1]', 'FieldValueInvalid', `Invalid value: "pods/status": if 'pods/*' is present, must not specify pods/status`],
    ['webhooks[0].rules[0].resources[3]', 'FieldValueInvalid', `Invalid value: "deployments/scale": if '*/scale' is present, must not specify deployments/scale`],
    ['webhooks[0].rules[0].resources[4]', 'FieldValueRequired', 'Required value']] },
  { what: 'scope', webhooks: [hook('a.example.com', { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Global' }] })],
    causes: [['webhooks[0].rules[0].scope', 'FieldValueNotSupported', 'Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"']] },
  { what: 'namespaceSelector', webhooks: [hook('a.example.com', { namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In' }] } })],
    causes: [['webhooks[0].namespaceSelector.matchExpressions[0].values', 'FieldValueRequired', /must be specified when `operator` is 'In' or 'NotIn'/]] },
  { what: 'objectSelector label and value', webhooks: [hook('a.example.com', { objectSelector: { matchLabels: { 'bad key!': 'x' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['not ok'] }] } })], causes: [
    ['webhooks[0].objectSelector.matchLabels', 'FieldValueInvalid', /^Invalid value: "bad key!"/],
    ['webhooks[0].objectSelector.matchExpressions[0].values[0]', 'FieldValueInvalid', /^Invalid value: "not ok": a valid label must be/]] },
  { what: 'matchConditions refused: no CEL evaluator', webhooks: [hook('a.example.com', { matchConditions: [{ name: 'not-kube-system', expression: "object.metadata.namespace != 'kube-system'" }] })],
    causes: [['webhooks[0].matchConditions', 'FieldValueForbidden', /^Forbidden: CEL match conditions are not supported by this server/]] },
];

t.test('validation: each rule gives 422 Invalid with Kubernetes\' field path', async (t) => {
  let n = 0;
  for (const k of cases) {
    const kinds = k.kind ? [k.kind] : (['Mutating', 'Validating'] as const);
    for (const kind of kinds) {
      const r = await c.request('POST', kind === 'Mutating' ? MWC : VWC, { body: config(kind, `bad-${n++}`, k.webhooks) });
      t.equal(r.status, 422, `${kind}: ${k.what}: ${JSON.stringify(r.json?.message)}`);
      t.equal(r.json?.reason, 'Invalid');
      const got = causesOf(r);
      t.equal(got.length, k.causes.length, `${kind}: ${k.what}: ${JSON.stringify(got)}`);
      k.causes.forEach(([field, reason, message], i) => {
        t.equal(got[i]?.field, field, `${kind}: ${k.what}: field`);
        t.equal(got[i]?.reason, reason, `${kind}: ${k.what}: reason`);
        if (typeof message === 'string') t.equal(got[i]?.message, message); else t.match(got[i]?.message, message);
      });
    }
  }
  const fine = await c.request('POST', VWC, { body: config('Validating', 'resource-forms', [hook('a.example.com', { rules: [
    { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: 'Cluster' },
    { operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'], apiGroups: ['', 'apps'], apiVersions: ['v1'], resources: ['*', '*/status', 'pods/*'], scope: 'Namespaced' },
  ], admissionReviewVersions: ['v1beta1', 'v2'], sideEffects: 'NoneOnDryRun', timeoutSeconds: 30, failurePolicy: 'Ignore',
  clientConfig: { service: { namespace: 'd', name: 'x', path: '/a.b/c-d/', port: 65535 } } })]) });
  t.equal(fine.status, 201, `the allowed forms pass: ${JSON.stringify(fine.json?.message)}`);
  // It matches every write: gone before the webhook plugins could call it for the next tests.
  t.equal((await c.request('DELETE', `${VWC}/resource-forms`)).status, 200);
});

t.test('update and patch: validation applies, generation follows webhooks', async (t) => {
  const created = await c.request('POST', VWC, { body: config('Validating', 'upd', [hook('a.example.com'), hook('b.example.com')]) });
  t.equal(created.status, 201);
  const obj: Any = created.json;
  obj.webhooks[0].timeoutSeconds = 5;
  const put = await c.request('PUT', `${VWC}/upd`, { body: obj });
  t.equal(put.status, 200, JSON.stringify(put.json?.message));
  t.equal(put.json.metadata.generation, 2, 'a webhook change bumps generation');
  t.equal(put.json.webhooks[0].timeoutSeconds, 5);

  const label = await c.request('PATCH', `${VWC}/upd`, { raw: '{"metadata":{"labels":{"team":"a"}}}', contentType: 'application/merge-patch+json' });
  t.equal(label.status, 200);
  t.equal(label.json.metadata.generation, 2, 'a metadata change does not');

  const smp = await c.request('PATCH', `${VWC}/upd`, { raw: '{"webhooks":[{"name":"b.example.com","failurePolicy":"Ignore"}]}', contentType: 'application/strategic-merge-patch+json' });
  t.equal(smp.status, 200, JSON.stringify(smp.json?.message));
  t.same(smp.json.webhooks.map((w: Any) => [w.name, w.failurePolicy]), [['a.example.com', 'Fail'], ['b.example.com', 'Ignore']], 'strategic merge by webhook name');
  t.equal(smp.json.metadata.generation, 3);

  const noPort = await c.request('PATCH', `${VWC}/upd`, { raw: '{"webhooks":[{"name":"a.example.com","clientConfig":{"service":{"port":null}}}]}', contentType: 'application/strategic-merge-patch+json' });
  t.equal(noPort.json.webhooks[0].clientConfig.service.port, 443, 'defaults apply on patch too');

  const bad = await c.request('PATCH', `${VWC}/upd`, { raw: '{"webhooks":[{"name":"b.example.com","timeoutSeconds":60}]}', contentType: 'application/strategic-merge-patch+json' });
  t.equal(bad.status, 422);
  t.equal(causesOf(bad)[0]?.field, 'webhooks[1].timeoutSeconds');
  const dup = await c.request('PATCH', `${VWC}/upd`, { raw: '[{"op":"replace","path":"/webhooks/1/name","value":"a.example.com"}]', contentType: 'application/json-patch+json' });
  t.equal(dup.status, 422, 'a duplicate name is refused on update while the stored names are unique');
  t.equal(causesOf(dup)[0]?.field, 'webhooks[1].name');
  t.equal((await c.request('GET', `${VWC}/upd`)).json.metadata.generation, 3, 'refused writes change nothing');
});

t.test('update ratchets rules the stored object already breaks (as Kubernetes does)', async (t) => {
  const old: Any = config('Validating', 'old', [hook('a.example.com', { sideEffects: 'Some', admissionReviewVersions: ['v2'] }), hook('a.example.com')]);
  const next: Any = structuredClone(old);
  t.same(validateWebhooks(next, old, 'validating'), [], 'Some, unrecognized versions and duplicate names stay allowed');
  t.same(validateWebhooks(next, undefined, 'validating').map((e) => e.field),
    ['webhooks[0].sideEffects', 'webhooks[0].admissionReviewVersions', 'webhooks[1].name'], 'but not on create');
  const strictOld: Any = config('Validating', 'old', [hook('a.example.com')]);
  t.same(validateWebhooks(next, strictOld, 'validating').map((e) => e.field),
    ['webhooks[0].sideEffects', 'webhooks[0].admissionReviewVersions', 'webhooks[1].name'], 'nor when the stored object kept them');
});

t.test('list, table, delete', async (t) => {
  const body = config('Mutating', 'listed', [hook('a.example.com'), hook('b.example.com')]);
  t.equal((await c.request('POST', MWC, { body })).status, 201);
  const list = await c.request('GET', MWC);
  t.equal(list.json.kind, 'MutatingWebhookConfigurationList');
  t.equal(list.json.apiVersion, 'admissionregistration.k8s.io/v1');
  t.ok(list.json.items.some((i: Any) => i.metadata.name === 'listed'));

  const tbl = await c.request('GET', MWC, { accept: TBL });
  t.equal(tbl.json.kind, 'Table');
  t.same(tbl.json.columnDefinitions.map((d: Any) => [d.name, d.type]), [['Name', 'string'], ['Webhooks', 'integer'], ['Age', 'string']]);
  const row = tbl.json.rows.find((r: Any) => r.cells[0] === 'listed');
  t.equal(row.cells[1], 2, 'WEBHOOKS is the count');
  const vtbl = await c.request('GET', `${VWC}/defaults`, { accept: TBL });
  t.same(vtbl.json.columnDefinitions.map((d: Any) => d.name), ['Name', 'Webhooks', 'Age']);
  t.same(vtbl.json.rows[0].cells.slice(0, 2), ['defaults', 1]);

  const del = await c.request('DELETE', `${MWC}/listed`);
  t.equal(del.status, 200);
  t.equal((await c.request('GET', `${MWC}/listed`)).status, 404);
  t.equal((await c.request('POST', `/api/v1/namespaces/default/mutatingwebhookconfigurations`, { body })).status, 404, 'not served namespaced');
});

t.test('discovery lists both resources under admissionregistration.k8s.io/v1', async (t) => {
  const apis = await c.request('GET', '/apis');
  const group = apis.json.groups.find((g: Any) => g.name === 'admissionregistration.k8s.io');
  t.same(group?.preferredVersion, { groupVersion: 'admissionregistration.k8s.io/v1', version: 'v1' });
  const list = (await c.request('GET', GV)).json;
  t.equal(list.kind, 'APIResourceList');
  const byName = new Map<string, Any>(list.resources.map((r: Any) => [r.name, r]));
  t.same([...byName.keys()].sort(), ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']);
  for (const [plural, kind] of [['mutatingwebhookconfigurations', 'MutatingWebhookConfiguration'], ['validatingwebhookconfigurations', 'ValidatingWebhookConfiguration']]) {
    const r = byName.get(plural!);
    t.match(r, { singularName: kind!.toLowerCase(), namespaced: false, kind, categories: ['api-extensions'] });
    t.notOk('shortNames' in r, `${plural}: no short names, as in Kubernetes`);
    t.same(r.verbs, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
  }
  const v2 = await c.request('GET', '/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
  const item = v2.json.items.find((i: Any) => i.metadata.name === 'admissionregistration.k8s.io');
  const res = item.versions[0].resources.find((r: Any) => r.resource === 'validatingwebhookconfigurations');
  t.match(res, { scope: 'Cluster', responseKind: { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingWebhookConfiguration' } });
});

t.test('the Kubernetes HEAD fixtures: refused as they are, a round trip once made valid', { skip: FIXTURES ? false : 'no k8s-testdata/HEAD' }, async (t) => {
  for (const kind of ['Mutating', 'Validating'] as const) {
    const fixture: Any = JSON.parse(await readFile(`${FIXTURES!}/admissionregistration.k8s.io.v1.${kind}WebhookConfiguration.json`, 'utf8'));
    const path = kind === 'Mutating' ? MWC : VWC;
    // The server owns these metadata fields; a cluster-scoped object has no namespace.
    const { labels, annotations } = fixture.metadata;
    fixture.metadata = { name: `fixture-${kind.toLowerCase()}`, labels, annotations };

    const raw = await c.request('POST', path, { body: fixture });
    t.equal(raw.status, 422, `${kind}: the placeholder values are invalid`);
    const fields = new Set(causesOf(raw).map((x) => x.field));
    for (const f of ['webhooks[0].name', 'webhooks[0].clientConfig', 'webhooks[0].rules[0].operations[0]', 'webhooks[0].rules[0].scope',
      'webhooks[0].failurePolicy', 'webhooks[0].matchPolicy', 'webhooks[0].sideEffects', 'webhooks[0].admissionReviewVersions',
      'webhooks[0].namespaceSelector.matchExpressions[0].operator', 'webhooks[0].matchConditions']) t.ok(fields.has(f), `${kind}: ${f} refused`);
    if (kind === 'Mutating') t.ok(fields.has('webhooks[0].reinvocationPolicy'));

    // What validation refuses, replaced: the url (only the service stays), enum placeholders,
    // the selectors' operator, and the CEL matchConditions this server cannot evaluate.
    const w = fixture.webhooks[0];
    w.name = 'fixture.example.com';
    delete w.clientConfig.url;
    w.clientConfig.service.path = '/path-value';
    w.rules[0] = { ...w.rules[0], operations: ['CREATE'], scope: 'Namespaced' };
    Object.assign(w, { failurePolicy: 'Ignore', matchPolicy: 'Exact', sideEffects: 'NoneOnDryRun', admissionReviewVersions: ['v1', 'admissionreviewversionsvalue'] });
    for (const sel of [w.namespaceSelector, w.objectSelector]) sel.matchExpressions[0].operator = 'In';
    delete w.matchConditions;
    if (kind === 'Mutating') w.reinvocationPolicy = 'IfNeeded';

    const made = await c.request('POST', path, { body: fixture });
    t.equal(made.status, 201, `${kind}: ${JSON.stringify(made.json?.message)}`);
    const got = await c.request('GET', `${path}/${fixture.metadata.name}`);
    t.same(got.json.webhooks, fixture.webhooks, `${kind}: every webhook field comes back as sent (caBundle ${w.clientConfig.caBundle} included)`);
    t.same(got.json.metadata.labels, labels);
    const pb = await c.request('GET', `${path}/${fixture.metadata.name}`, { accept: 'application/vnd.kubernetes.protobuf' });
    t.equal(pb.status, 200, `${kind}: served as protobuf`);
    t.equal(pb.headers['content-type'], 'application/vnd.kubernetes.protobuf');
    const put = await c.request('PUT', `${path}/${fixture.metadata.name}`, { raw: pb.body, contentType: 'application/vnd.kubernetes.protobuf' });
    t.equal(put.status, 200, `${kind}: the protobuf form written back: ${JSON.stringify(put.json?.message)}`);
    t.same(put.json.webhooks, fixture.webhooks, `${kind}: unchanged through protobuf (caBundle bytes included)`);
    t.equal(put.json.metadata.generation, 1, `${kind}: an unchanged write keeps generation`);
  }
});
