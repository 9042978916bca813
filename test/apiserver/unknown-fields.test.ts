// Unknown fields are never stored, as in Kubernetes: a built-in kind drops them under
// fieldValidation=Warn (with a warning) and Ignore, and refuses them under Strict, on every write
// path (create, generateName create, update, the status subresource, every patch type, apply);
// a custom resource drops what its schema does not allow (its metadata as ObjectMeta) and keeps
// what x-kubernetes-preserve-unknown-fields covers.
import t, { type Test } from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply } from '../helpers/rest-client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });
const CM = '/api/v1/namespaces/default/configmaps';

const issueBody = (name: string): Any => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, bogusMeta: 1 }, bogusTop: { x: 1 }, data: { a: '1' } });

function noUnknown(t: Test, o: Any, what: string): void {
  t.notOk(o && 'bogusTop' in o, `${what}: no bogusTop`);
  t.notOk(o?.metadata && 'bogusMeta' in o.metadata, `${what}: no metadata.bogusMeta`);
}

async function stored(name: string): Promise<Any> {
  const r = await c.request('GET', `${CM}/${name}`);
  return r.json;
}

t.test('create drops unknown fields under Warn and Ignore, refuses them under Strict', async (t) => {
  const warn = await c.request('POST', CM, { body: issueBody('u1') });
  t.equal(warn.status, 201);
  t.match(String(warn.headers.warning), /unknown field \\"bogusTop\\"/);
  t.match(String(warn.headers.warning), /unknown field \\"metadata.bogusMeta\\"/);
  noUnknown(t, warn.json, 'the answer');
  noUnknown(t, await stored('u1'), 'GET');
  t.same((await stored('u1')).data, { a: '1' }, 'known fields stay');

  const ignore = await c.request('POST', `${CM}?fieldValidation=Ignore`, { body: issueBody('u2') });
  t.equal(ignore.status, 201);
  t.equal(ignore.headers.warning, undefined, 'Ignore warns of nothing');
  noUnknown(t, await stored('u2'), 'GET after Ignore');

  const strict = await c.request('POST', `${CM}?fieldValidation=Strict`, { body: issueBody('u3') });
  t.equal(strict.status, 400);
  t.equal((await c.request('GET', `${CM}/u3`)).status, 404, 'Strict stores nothing');

  const yaml = await c.request('POST', CM, { raw: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: u4\n  bogusMeta: 1\nbogusTop: 2\n', contentType: 'application/yaml' });
  t.equal(yaml.status, 201);
  noUnknown(t, await stored('u4'), 'GET after a YAML create');

  const gen = await c.request('POST', CM, { body: { ...issueBody(''), metadata: { generateName: 'gen-', bogusMeta: 1 } } });
  t.equal(gen.status, 201);
  noUnknown(t, await stored(gen.json.metadata.name), 'GET after a generateName create');
});

t.test('update and every patch type drop unknown fields', async (t) => {
  await c.request('POST', CM, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'p' }, data: { a: '1' } } });
  const cur = await stored('p');
  const put = await c.request('PUT', `${CM}/p`, { body: { ...issueBody('p'), metadata: { ...cur.metadata, bogusMeta: 1 } } });
  t.equal(put.status, 200, put.body.toString());
  t.match(String(put.headers.warning), /unknown field \\"bogusTop\\"/);
  noUnknown(t, await stored('p'), 'GET after PUT');

  const patches: [string, unknown][] = [
    ['application/merge-patch+json', { bogusTop: { x: 1 }, metadata: { bogusMeta: 1 }, data: { m: '1' } }],
    ['application/strategic-merge-patch+json', { bogusTop: { x: 1 }, metadata: { bogusMeta: 1 }, data: { s: '1' } }],
    ['application/json-patch+json', [{ op: 'add', path: '/bogusTop', value: { x: 1 } }, { op: 'add', path: '/metadata/bogusMeta', value: 1 }]],
  ];
  for (const [ct, body] of patches) {
    const r = await c.request('PATCH', `${CM}/p`, { raw: JSON.stringify(body), contentType: ct });
    t.equal(r.status, 200, `${ct}: ${r.body.toString()}`);
    t.match(String(r.headers.warning), /unknown field \\"bogusTop\\"/, `${ct} warns`);
    noUnknown(t, r.json, `${ct} answer`);
    noUnknown(t, await stored('p'), `GET after ${ct}`);
  }
  const applied = await c.request('PATCH', `${CM}/p?fieldManager=tester`, { raw: JSON.stringify(issueBody('p')), contentType: 'application/apply-patch+yaml' });
  t.equal(applied.status, 200, applied.body.toString());
  t.match(String(applied.headers.warning), /unknown field \\"bogusTop\\"/, 'apply warns');
  noUnknown(t, await stored('p'), 'GET after apply');
  const created = await c.request('PATCH', `${CM}/p2?fieldManager=tester`, { raw: JSON.stringify(issueBody('p2')), contentType: 'application/apply-patch+yaml' });
  t.equal(created.status, 201);
  noUnknown(t, await stored('p2'), 'GET after an apply that created');
  const strict = await c.request('PATCH', `${CM}/p?fieldValidation=Strict`, { raw: '{"bogusTop":1}', contentType: 'application/merge-patch+json' });
  t.equal(strict.status, 400, 'a Strict patch with an unknown field is refused');
});

t.test('the status subresource drops unknown fields', async (t) => {
  await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'unknown-status' } } });
  const ns = (await c.request('GET', '/api/v1/namespaces/unknown-status')).json;
  const r = await c.request('PUT', '/api/v1/namespaces/unknown-status/status', { body: { ...ns, status: { ...ns.status, bogusStatus: 1 }, bogusTop: 1 } });
  t.equal(r.status, 200, r.body.toString());
  t.match(String(r.headers.warning), /unknown field \\"status.bogusStatus\\"/);
  const got = (await c.request('GET', '/api/v1/namespaces/unknown-status')).json;
  t.notOk('bogusStatus' in got.status, 'status.bogusStatus dropped');
  t.notOk('bogusTop' in got, 'bogusTop dropped');
  const m = await c.request('PATCH', '/api/v1/namespaces/unknown-status/status', { raw: '{"status":{"bogusStatus":2}}', contentType: 'application/merge-patch+json' });
  t.equal(m.status, 200);
  t.notOk('bogusStatus' in (await c.request('GET', '/api/v1/namespaces/unknown-status')).json.status, 'dropped after a status patch');
});

t.test('custom resources: pruned by their schema and ObjectMeta; preserved fields stay', async (t) => {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.unknown.example.com' },
    spec: {
      group: 'unknown.example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: {
        spec: { type: 'object', properties: { size: { type: 'integer' }, free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
      } } } }],
    },
  };
  t.equal((await c.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd })).status, 201);
  const W = '/apis/unknown.example.com/v1/namespaces/default/widgets';
  let r: Reply | undefined;
  const deadline = Date.now() + 15_000;
  const body = { apiVersion: 'unknown.example.com/v1', kind: 'Widget', metadata: { name: 'w', bogusMeta: 1 }, spec: { size: 1, junk: 1, free: { anything: { x: 1 } } }, bogusTop: 1 };
  while (Date.now() < deadline) {
    r = await c.request('POST', W, { body });
    if (r.status !== 404) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  t.equal(r?.status, 201, String(r?.body));
  const warnings = String(r?.headers.warning);
  for (const p of ['metadata.bogusMeta', 'spec.junk', 'bogusTop']) t.match(warnings, `unknown field \\"${p}\\"`, `${p} reported`);
  const got = (await c.request('GET', `${W}/w`)).json;
  t.notOk('bogusMeta' in got.metadata, 'metadata.bogusMeta dropped');
  t.notOk('bogusTop' in got, 'bogusTop dropped');
  t.same(got.spec, { size: 1, free: { anything: { x: 1 } } }, 'spec.junk dropped, the preserved subtree kept');
  const ignored = await c.request('PATCH', `${W}/w?fieldValidation=Ignore`, { raw: '{"metadata":{"bogusMeta":2}}', contentType: 'application/merge-patch+json' });
  t.equal(ignored.status, 200);
  t.notOk('bogusMeta' in (await c.request('GET', `${W}/w`)).json.metadata, 'dropped under Ignore too');
});
