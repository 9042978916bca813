import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const cm = (name: string, data: Record<string, string> = { a: '1' }): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });

t.test('create, get, update with conflict, delete', async (t) => {
  const created = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('c1') });
  t.equal(created.status, 201);
  const m = created.json.metadata;
  t.match(m, { name: 'c1', namespace: 'default' });
  t.ok(m.uid && m.resourceVersion && m.creationTimestamp, 'system fields set');
  t.equal(created.json.kind, 'ConfigMap');

  const again = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('c1') });
  t.equal(again.status, 409);
  t.equal(again.json.reason, 'AlreadyExists');
  t.equal(again.json.message, 'configmaps "c1" already exists');

  const got = await c.request('GET', '/api/v1/namespaces/default/configmaps/c1');
  t.same(got.json.data, { a: '1' });

  const upd = await c.request('PUT', '/api/v1/namespaces/default/configmaps/c1', { body: { ...got.json, data: { a: '2' } } });
  t.equal(upd.status, 200);
  t.not(upd.json.metadata.resourceVersion, got.json.metadata.resourceVersion);

  const stale = await c.request('PUT', '/api/v1/namespaces/default/configmaps/c1', { body: { ...got.json, data: { a: '3' } } });
  t.equal(stale.status, 409);
  t.equal(stale.json.reason, 'Conflict');
  t.match(stale.json.message, /the object has been modified/);

  const unconditional = await c.request('PUT', '/api/v1/namespaces/default/configmaps/c1', { body: { ...cm('c1', { a: '4' }) } });
  t.equal(unconditional.status, 200, 'update without resourceVersion is unconditional');
  t.equal(unconditional.json.metadata.uid, m.uid, 'uid kept');

  const del = await c.request('DELETE', '/api/v1/namespaces/default/configmaps/c1');
  t.equal(del.status, 200);
  const gone = await c.request('GET', '/api/v1/namespaces/default/configmaps/c1');
  t.equal(gone.status, 404);
  t.match(gone.json, { kind: 'Status', reason: 'NotFound', code: 404, message: 'configmaps "c1" not found', details: { name: 'c1', kind: 'configmaps' } });
});

t.test('request errors are Status objects with the right code', async (t) => {
  const mismatch = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { ...cm('x'), metadata: { name: 'x', namespace: 'other' } } });
  t.equal(mismatch.status, 400);
  t.equal(mismatch.json.message, 'the namespace of the provided object does not match the namespace sent on the request');

  const wrongKind = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { ...cm('x'), kind: 'Secret' } });
  t.equal(wrongKind.status, 400);
  const wrongVersion = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { ...cm('x'), apiVersion: 'apps/v1' } });
  t.equal(wrongVersion.status, 400);

  const malformed = await c.request('POST', '/api/v1/namespaces/default/configmaps', { raw: '{"kind": "ConfigMap", ' });
  t.equal(malformed.status, 400);
  t.equal(malformed.json.reason, 'BadRequest');
  const badYaml = await c.request('POST', '/api/v1/namespaces/default/configmaps', { raw: 'a: [1, 2', contentType: 'application/yaml' });
  t.equal(badYaml.status, 400);

  const huge = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: cm('big', { a: 'x'.repeat(3 * 1024 * 1024 + 10) }) });
  t.equal(huge.status, 413);
  t.equal(huge.json.reason, 'RequestEntityTooLarge');
  t.equal((await c.request('GET', '/api/v1/namespaces/default/configmaps/big')).status, 404, 'nothing written');

  const onCollection = await c.request('PUT', '/api/v1/namespaces/default/configmaps', { body: cm('x') });
  t.equal(onCollection.status, 405);
  t.equal(onCollection.json.reason, 'MethodNotAllowed');

  const notAcceptable = await c.request('GET', '/api/v1/namespaces/default/configmaps', { accept: 'text/html' });
  t.equal(notAcceptable.status, 406);
  t.equal(notAcceptable.json.reason, 'NotAcceptable');

  const unsupported = await c.request('POST', '/api/v1/namespaces/default/configmaps', { raw: 'x', contentType: 'text/plain' });
  t.equal(unsupported.status, 415);

  const unknownResource = await c.request('GET', '/api/v1/namespaces/default/widgets');
  t.equal(unknownResource.status, 404);

  const invalid = await c.request('POST', '/api/v1/namespaces/default/pods', { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'Bad_Name' }, spec: { containers: [{ name: 'c' }] } } });
  t.equal(invalid.status, 422);
  t.equal(invalid.json.reason, 'Invalid');
  t.match(invalid.json.message, /^Pod "Bad_Name" is invalid: \[metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
  t.same(invalid.json.details.causes.map((x: { field: string }) => x.field).sort(), ['metadata.name', 'spec.containers[0].image']);

  const noName = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} } });
  t.equal(noName.status, 422);
  t.match(noName.json.message, /metadata.name: Required value: name or generateName is required/);

  const badSelector = await c.request('GET', '/api/v1/namespaces/default/pods?labelSelector=a%20in%20(b');
  t.equal(badSelector.status, 400);
  const badField = await c.request('GET', '/api/v1/namespaces/default/pods?fieldSelector=spec.foo%3Dx');
  t.equal(badField.status, 400);
  t.match(badField.json.message, /field label not supported: spec.foo/);
});

t.test('generateName, dryRun, fieldValidation', async (t) => {
  const g = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'gen-' } } });
  t.equal(g.status, 201);
  t.match(g.json.metadata.name, /^gen-[a-z0-9]{5}$/);

  const mf = await c.request('POST', '/api/v1/namespaces/default/configmaps?fieldManager=creator', { body: cm('mf') });
  t.match(mf.json.metadata.managedFields, [{ manager: 'creator', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1' }]);
  t.ok(mf.json.metadata.managedFields[0].fieldsV1['f:data'], 'owned fields recorded');
  const mf2 = await c.request('PUT', '/api/v1/namespaces/default/configmaps/mf?fieldManager=updater', { body: cm('mf', { a: '2' }) });
  t.ok(mf2.json.metadata.managedFields.some((m: { manager: string; fieldsV1: Record<string, unknown> }) => m.manager === 'updater' && m.fieldsV1['f:data']), 'the updater now owns data.a');
  const dry = await c.request('POST', '/api/v1/namespaces/default/configmaps?dryRun=All', { body: cm('dry') });
  t.equal(dry.status, 201);
  t.equal(dry.json.metadata.name, 'dry');
  t.equal((await c.request('GET', '/api/v1/namespaces/default/configmaps/dry')).status, 404, 'dry run persists nothing');
  t.equal((await c.request('POST', '/api/v1/namespaces/default/configmaps?dryRun=Some', { body: cm('dry') })).status, 400);

  const strict = await c.request('POST', '/api/v1/namespaces/default/configmaps?fieldValidation=Strict', { body: { ...cm('fv'), bogus: 1 } });
  t.equal(strict.status, 400);
  t.match(strict.json.message, /unknown field "bogus"/);
  const warn = await c.request('POST', '/api/v1/namespaces/default/configmaps?fieldValidation=Warn', { body: { ...cm('fv'), bogus: 1 } });
  t.equal(warn.status, 201);
  t.match(String(warn.headers.warning), /unknown field \\"bogus\\"/);
});

t.test('list: selectors, paging, cluster-wide, resourceVersion', async (t) => {
  await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lists' } } });
  for (let i = 0; i < 5; i++) {
    const r = await c.request('POST', '/api/v1/namespaces/lists/configmaps', { body: { ...cm(`l${i}`), metadata: { name: `l${i}`, labels: { idx: String(i), even: String(i % 2 === 0) } } } });
    t.equal(r.status, 201);
  }
  const all = await c.request('GET', '/api/v1/namespaces/lists/configmaps');
  t.equal(all.json.kind, 'ConfigMapList');
  t.equal(all.json.apiVersion, 'v1');
  t.ok(all.json.metadata.resourceVersion);
  t.equal(all.json.items.length, 5);
  const even = await c.request('GET', '/api/v1/namespaces/lists/configmaps?labelSelector=even%3Dtrue');
  t.same(even.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['l0', 'l2', 'l4']);
  const setSel = await c.request('GET', '/api/v1/namespaces/lists/configmaps?labelSelector=idx%20in%20(1,3),even!%3Dtrue');
  t.same(setSel.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['l1', 'l3']);
  const byName = await c.request('GET', '/api/v1/namespaces/lists/configmaps?fieldSelector=metadata.name%3Dl2');
  t.same(byName.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['l2']);

  const names: string[] = [];
  let cont = '';
  let pages = 0;
  do {
    const page = await c.request('GET', `/api/v1/namespaces/lists/configmaps?limit=2${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
    t.equal(page.status, 200);
    names.push(...page.json.items.map((i: { metadata: { name: string } }) => i.metadata.name));
    cont = page.json.metadata.continue ?? '';
    pages++;
  } while (cont && pages < 10);
  t.same(names, ['l0', 'l1', 'l2', 'l3', 'l4']);
  t.equal(pages, 3);

  const cluster = await c.request('GET', '/api/v1/configmaps?labelSelector=idx');
  t.equal(cluster.json.items.length, 5, 'cluster-wide list of a namespaced resource');
  t.ok(cluster.json.items.every((i: { metadata: { namespace: string } }) => i.metadata.namespace === 'lists'));

  const rv0 = await c.request('GET', '/api/v1/namespaces/lists/configmaps?resourceVersion=0');
  t.equal(rv0.status, 200);
  t.equal((await c.request('GET', '/api/v1/namespaces/lists/configmaps?resourceVersionMatch=Exact')).status, 400);
});

t.test('patch types', async (t) => {
  await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', {
    body: {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'pd' },
      spec: { selector: { matchLabels: { app: 'pd' } }, template: { metadata: { labels: { app: 'pd' } }, spec: { containers: [{ name: 'a', image: 'x:1' }, { name: 'b', image: 'y:1' }] } } },
    },
  });
  const merge = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/pd', { raw: '{"spec":{"replicas":4}}', contentType: 'application/merge-patch+json' });
  t.equal(merge.status, 200);
  t.equal(merge.json.spec.replicas, 4);
  t.equal(merge.json.metadata.generation, 2);

  const json = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/pd', { raw: '[{"op":"replace","path":"/spec/replicas","value":5},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]', contentType: 'application/json-patch+json' });
  t.equal(json.status, 200);
  t.equal(json.json.spec.replicas, 5);
  t.same(json.json.metadata.labels, { x: 'y' });
  const badJson = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/pd', { raw: '[{"op":"test","path":"/spec/replicas","value":9}]', contentType: 'application/json-patch+json' });
  t.not(badJson.status, 200, 'failed json-patch test op');

  const smp = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/pd', {
    raw: JSON.stringify({ spec: { template: { spec: { $setElementOrder_containers: undefined, containers: [{ name: 'b', image: 'y:2' }] } } } }),
    contentType: 'application/strategic-merge-patch+json',
  });
  t.equal(smp.status, 200);
  const cs = smp.json.spec.template.spec.containers;
  t.same(cs.map((x: { name: string; image: string }) => `${x.name}=${x.image}`), ['a=x:1', 'b=y:2'], 'containers merged by name');

  const del = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/pd', {
    raw: JSON.stringify({ spec: { template: { spec: { containers: [{ name: 'a', $patch: 'delete' }] } } } }),
    contentType: 'application/strategic-merge-patch+json',
  });
  t.same(del.json.spec.template.spec.containers.map((x: { name: string }) => x.name), ['b']);

  const ssaNoManager = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/ssa', { raw: JSON.stringify(cm('ssa')), contentType: 'application/apply-patch+yaml' });
  t.equal(ssaNoManager.status, 422);
  const ssa = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/ssa?fieldManager=tester', { raw: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v\n', contentType: 'application/apply-patch+yaml' });
  t.equal(ssa.status, 201, 'apply creates when absent');
  t.same(ssa.json.data, { k: 'v' });
  t.equal(ssa.json.metadata.managedFields[0].manager, 'tester');
  t.equal(ssa.json.metadata.managedFields[0].operation, 'Apply');
  const ssa2 = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/ssa?fieldManager=tester', { raw: JSON.stringify({ ...cm('ssa', { k: 'w' }) }), contentType: 'application/apply-patch+yaml' });
  t.equal(ssa2.status, 200);
  t.same(ssa2.json.data, { k: 'w' });

  const missing = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/nope', { raw: '{"data":{"a":"b"}}', contentType: 'application/merge-patch+json' });
  t.equal(missing.status, 404);
  const unknownType = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/ssa', { raw: '{}', contentType: 'application/x-whatever' });
  t.equal(unknownType.status, 415);
});
