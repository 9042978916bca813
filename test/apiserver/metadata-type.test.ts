// metadata of another JSON type than an object is a 400 in Go's decoder words for every kind,
// also those without a schema message (the apiextensions kinds, custom resources); the fuzz
// suite found a CustomResourceDefinition whose metadata was a string answered 500.
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

t.test('metadata must be an object', async (t) => {
  const a = await startApiserver({});
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  const crds = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  for (const metadata of ['{"name":"x.example.com"}', 5, true, ['x']]) {
    const r = await c.request('POST', crds, { body: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata, spec: {} } });
    t.equal(r.status, 400, `metadata ${JSON.stringify(metadata)}: 400`);
    t.match(r.json.message, /^CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: json: cannot unmarshal (string|number|bool|array) into Go struct field CustomResourceDefinition.metadata of type v1.ObjectMeta$/);
  }
  t.equal((await c.request('GET', crds)).json.items.length, 0, 'nothing stored');
  const ok = await c.request('POST', crds, { body: {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
    spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
  } });
  t.equal(ok.status, 201);
  let r;
  for (let i = 0; i < 100; i++) {
    r = await c.request('POST', '/apis/example.com/v1/namespaces/default/widgets', { body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: 'w1' } });
    if (r.status !== 404) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  t.equal(r!.status, 400, 'a custom resource too');
  t.match(r!.json.message, /Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal string/);
});
