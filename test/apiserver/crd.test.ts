/**
 * CustomResourceDefinitions through the real API server: CRD validation, the naming check and
 * Established condition, discovery and OpenAPI of the new resource, custom-resource CRUD with
 * the schema's pruning, defaults and validation, status and scale subresources, printer
 * columns, several versions, deletion with cleanup, and serving again after a restart.
 */
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply, type RestClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const CT = '/apis/stable.example.com/v1/namespaces/default/crontabs';

function crontabCrd(extra: Obj = {}): Obj {
  const version = (name: string, storage: boolean): Obj => ({
    name, served: true, storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: {
          spec: {
            type: 'object',
            properties: {
              cronSpec: { type: 'string', pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$' },
              image: { type: 'string' },
              replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
            },
            required: ['cronSpec'],
          },
          status: { type: 'object', properties: { replicas: { type: 'integer' } } },
        },
      },
    },
    subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
    additionalPrinterColumns: [
      { name: 'Spec', type: 'string', jsonPath: '.spec.cronSpec' },
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
      { name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1 },
    ],
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name: 'crontabs.stable.example.com' },
    spec: {
      group: 'stable.example.com', scope: 'Namespaced',
      names: { plural: 'crontabs', singular: 'crontab', kind: 'CronTab', shortNames: ['ct'], categories: ['all'] },
      versions: [version('v1', true), version('v1beta1', false)],
      ...extra,
    },
  };
}

const crontab = (name: string, spec: Obj, apiVersion = 'stable.example.com/v1'): Obj =>
  ({ apiVersion, kind: 'CronTab', metadata: { name }, spec });

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function established(c: RestClient, name: string): Promise<Any> {
  return waitFor(`${name} established`, async () => {
    const r = await c.request('GET', `${CRDS}/${name}`);
    return r.json?.status?.conditions?.some((x: Any) => x.type === 'Established' && x.status === 'True') ? r.json : undefined;
  });
}

async function served(c: RestClient, path: string): Promise<void> {
  await waitFor(`${path} served`, async () => ((await c.request('GET', path)).status === 200 ? true : undefined));
}

let a: StartedApiserver;
let c: RestClient;
t.before(async () => {
  a = await startApiserver();
  c = await connectClient(a);
});
t.teardown(async () => { c.close(); await a.stop(); });

t.test('CRD validation: Kubernetes rules and messages', async (t) => {
  const bad = async (body: Obj, field: string, message: RegExp): Promise<void> => {
    const r = await c.request('POST', CRDS, { body });
    t.equal(r.status, 422, `${field}: ${r.body}`);
    t.equal(r.json.reason, 'Invalid');
    t.ok(r.json.details.causes.some((x: Any) => x.field === field && message.test(x.message)), `${field} ${message}: ${JSON.stringify(r.json.details.causes)}`);
  };
  await bad({ ...crontabCrd(), metadata: { name: 'wrong.stable.example.com' } }, 'metadata.name', /must be spec.names.plural\+"."\+spec.group/);
  const twoStorage = crontabCrd();
  (twoStorage.spec as Any).versions[1].storage = true;
  await bad(twoStorage, 'spec.versions', /must have exactly one version marked as storage version/);
  const noSchema = crontabCrd();
  delete (noSchema.spec as Any).versions[0].schema;
  await bad(noSchema, 'spec.versions[0].schema.openAPIV3Schema', /Required value: schemas are required/);
  await bad({ ...crontabCrd({ group: 'example' }), metadata: { name: 'crontabs.example' } }, 'spec.group', /should be a domain with at least one dot/);
  await bad(crontabCrd({ scope: 'Global' }), 'spec.scope', /Unsupported value: "Global"/);
  await bad({ ...crontabCrd({ group: 'x.k8s.io' }), metadata: { name: 'crontabs.x.k8s.io' } }, 'metadata.annotations[api-approved.kubernetes.io]', /protected groups must have approval annotation/);
  const badColumn = crontabCrd();
  (badColumn.spec as Any).versions[0].additionalPrinterColumns = [{ name: 'X', type: 'float', jsonPath: '.spec.x' }];
  await bad(badColumn, 'spec.versions[0].additionalPrinterColumns[0].type', /must be one of boolean,date,integer,number,string/);
  // The conversion webhook's clientConfig is checked as an admission webhook's is.
  const webhook = (clientConfig: Obj): Obj => crontabCrd({ conversion: { strategy: 'Webhook', webhook: { clientConfig, conversionReviewVersions: ['v1'] } } });
  await bad(webhook({}), 'spec.conversion.webhook.clientConfig', /exactly one of url or service is required/);
  await bad(webhook({ url: 'http://convert.example.com/crontabs' }), 'spec.conversion.webhook.clientConfig.url', /'https' is the only allowed URL scheme/);
  await bad(webhook({ url: 'https://convert.example.com/x?y=1' }), 'spec.conversion.webhook.clientConfig.url', /query parameters are not permitted in the URL/);
  await bad(webhook({ service: { namespace: 'default', name: 'conv', port: 70000 } }), 'spec.conversion.webhook.clientConfig.service.port', /port is not valid: must be between 1 and 65535/);
  await bad(webhook({ service: { name: 'conv' } }), 'spec.conversion.webhook.clientConfig.service.namespace', /service namespace is required/);
  t.equal((await c.request('GET', `${CRDS}/crontabs.stable.example.com`)).status, 404, 'nothing was stored');
});

t.test('a CRD is accepted, established and served', async (t) => {
  const r = await c.request('POST', CRDS, { body: crontabCrd() });
  t.equal(r.status, 201, r.body.toString());
  t.equal(r.json.spec.names.listKind, 'CronTabList', 'listKind defaulted');
  t.same(r.json.spec.conversion, { strategy: 'None' });
  t.same(r.json.status.storedVersions, ['v1']);
  const crd = await established(c, 'crontabs.stable.example.com');
  t.match(crd.status.conditions, [{ type: 'NamesAccepted', status: 'True', reason: 'NoConflicts' }, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted' }]);
  t.same(crd.status.acceptedNames, { plural: 'crontabs', singular: 'crontab', kind: 'CronTab', listKind: 'CronTabList', shortNames: ['ct'], categories: ['all'] });
  await served(c, CT);

  const group = (await c.request('GET', '/apis/stable.example.com')).json;
  t.same(group.versions.map((v: Any) => v.version), ['v1', 'v1beta1'], 'versions by priority');
  t.equal(group.preferredVersion.version, 'v1');
  const list = (await c.request('GET', '/apis/stable.example.com/v1')).json;
  const names = list.resources.map((x: Any) => x.name).sort();
  t.same(names, ['crontabs', 'crontabs/scale', 'crontabs/status']);
  const main = list.resources.find((x: Any) => x.name === 'crontabs');
  t.match(main, { kind: 'CronTab', namespaced: true, singularName: 'crontab', shortNames: ['ct'], categories: ['all'] });
  t.same([...main.verbs].sort(), ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
  const agg = await c.request('GET', '/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
  t.ok(agg.json.items.some((g: Any) => g.metadata.name === 'stable.example.com'), 'aggregated discovery lists the group');

  const v3 = await c.request('GET', '/openapi/v3/apis/stable.example.com/v1');
  t.equal(v3.status, 200);
  const schema = v3.json.components.schemas['com.example.stable.v1.CronTab'];
  t.match(schema, { type: 'object', 'x-kubernetes-group-version-kind': [{ group: 'stable.example.com', version: 'v1', kind: 'CronTab' }] });
  t.match(schema.properties.spec.properties.replicas, { type: 'integer', default: 1 });
  t.ok(v3.json.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'], 'ObjectMeta is included');
  const v2 = await c.request('GET', '/openapi/v2');
  t.ok(v2.json.definitions['com.example.stable.v1.CronTabList'], 'the list schema is in v2');
});

t.test('custom resources: CRUD, schema, subresources, tables', async (t) => {
  let r = await c.request('POST', CT, { body: crontab('a', { cronSpec: '* * * * */5', image: 'img', junk: 1 }) });
  t.equal(r.status, 201, r.body.toString());
  t.equal(r.json.spec.replicas, 1, 'default applied');
  t.notOk('junk' in r.json.spec, 'unknown field pruned');
  t.match(String(r.headers['warning'] ?? ''), /unknown field \\"spec.junk\\"/, 'Warn reports the pruned field');
  t.equal(r.json.metadata.generation, 1);

  r = await c.request('POST', `${CT}?fieldValidation=Strict`, { body: crontab('strict', { cronSpec: '* * * * *', junk: 1 }) });
  t.equal(r.status, 400);
  t.match(r.json.message, /strict decoding error: unknown field "spec.junk"/);

  r = await c.request('POST', CT, { body: crontab('bad', { cronSpec: 'often', replicas: 'many' }) });
  t.equal(r.status, 422, r.body.toString());
  t.match(r.json.message, /^CronTab.stable.example.com "bad" is invalid: /);
  const fields = r.json.details.causes.map((x: Any) => x.field).sort();
  t.same(fields, ['spec.cronSpec', 'spec.replicas']);
  r = await c.request('POST', CT, { body: crontab('few', { cronSpec: '* * * * *', replicas: 11 }) });
  t.equal(r.status, 422);
  t.match(r.json.details.causes, [{ field: 'spec.replicas', message: /should be less than or equal to 10/ }]);
  r = await c.request('POST', CT, { body: crontab('nospec', {}) });
  t.equal(r.status, 422);
  t.match(r.json.details.causes, [{ field: 'spec.cronSpec', reason: 'FieldValueRequired' }]);

  // Status subresource: main writes keep status, status writes keep spec.
  r = await c.request('PATCH', `${CT}/a/status`, { raw: JSON.stringify({ status: { replicas: 1 }, spec: { image: 'ignored' } }), contentType: 'application/merge-patch+json' });
  t.equal(r.status, 200, r.body.toString());
  t.equal(r.json.status.replicas, 1);
  t.equal(r.json.spec.image, 'img', 'status write kept spec');
  r = await c.request('PATCH', `${CT}/a`, { raw: JSON.stringify({ spec: { image: 'img2' }, status: { replicas: 7 } }), contentType: 'application/merge-patch+json' });
  t.equal(r.status, 200);
  t.equal(r.json.spec.image, 'img2');
  t.equal(r.json.status.replicas, 1, 'main write kept status');
  t.equal(r.json.metadata.generation, 2, 'spec change bumped generation');

  r = await c.request('PATCH', `${CT}/a`, { raw: JSON.stringify({ spec: { image: 'x' } }), contentType: 'application/strategic-merge-patch+json' });
  t.equal(r.status, 415, 'no strategic merge patch for custom resources');
  r = await c.request('PATCH', `${CT}/a`, { raw: JSON.stringify([{ op: 'replace', path: '/spec/image', value: 'img3' }]), contentType: 'application/json-patch+json' });
  t.equal(r.json.spec.image, 'img3');

  // Scale.
  r = await c.request('GET', `${CT}/a/scale`);
  t.match(r.json, { kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 1 }, status: { replicas: 1 } });
  r = await c.request('PUT', `${CT}/a/scale`, { body: { ...r.json, spec: { replicas: 3 } } });
  t.equal(r.status, 200, r.body.toString());
  t.equal((await c.request('GET', `${CT}/a`)).json.spec.replicas, 3);

  // Protobuf asked for: JSON served (custom resources have no protobuf form).
  r = await c.request('GET', `${CT}/a`, { accept: 'application/vnd.kubernetes.protobuf, application/json' });
  t.equal(r.status, 200);
  t.match(String(r.headers['content-type']), /^application\/json/);

  // Table with the printer columns (the wide one at priority 1).
  r = await c.request('GET', CT, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.same(r.json.columnDefinitions.map((x: Any) => [x.name, x.priority]), [['Name', 0], ['Spec', 0], ['Replicas', 0], ['Image', 1]]);
  t.same(r.json.rows[0].cells, ['a', '* * * * */5', 3, 'img3']);

  // Another served version: same object, its own apiVersion.
  r = await c.request('GET', '/apis/stable.example.com/v1beta1/namespaces/default/crontabs/a');
  t.equal(r.json.apiVersion, 'stable.example.com/v1beta1');
  r = await c.request('POST', '/apis/stable.example.com/v1beta1/namespaces/default/crontabs', { body: crontab('b', { cronSpec: '0 * * * *' }, 'stable.example.com/v1beta1') });
  t.equal(r.status, 201);
  t.equal((await c.request('GET', `${CT}/b`)).json.apiVersion, 'stable.example.com/v1');

  // Label selectors and field selectors on lists.
  await c.request('PATCH', `${CT}/b`, { raw: JSON.stringify({ metadata: { labels: { tier: 'x' } } }), contentType: 'application/merge-patch+json' });
  t.same((await c.request('GET', `${CT}?labelSelector=tier%3Dx`)).json.items.map((o: Any) => o.metadata.name), ['b']);
  t.same((await c.request('GET', `${CT}?fieldSelector=metadata.name%3Da`)).json.items.map((o: Any) => o.metadata.name), ['a']);
});

t.test('names another CRD of the group holds are not accepted', async (t) => {
  const crd = crontabCrd();
  const spec = crd.spec as Any;
  spec.names = { plural: 'crontabbers', kind: 'CronTabber', shortNames: ['ct'] };
  spec.versions = [spec.versions[0]];
  crd.metadata = { name: 'crontabbers.stable.example.com' };
  const r = await c.request('POST', CRDS, { body: crd });
  t.equal(r.status, 201);
  const got = await waitFor('naming outcome', async () => {
    const x = (await c.request('GET', `${CRDS}/crontabbers.stable.example.com`)).json;
    return x.status?.conditions?.length ? x : undefined;
  });
  t.match(got.status.conditions, [{ type: 'NamesAccepted', status: 'False', reason: 'ShortNamesConflict', message: '"ct" is already in use' }, { type: 'Established', status: 'False', reason: 'NotAccepted' }]);
  t.equal((await c.request('GET', '/apis/stable.example.com/v1/namespaces/default/crontabbers')).status, 404, 'not served');
  t.equal((await c.request('DELETE', `${CRDS}/crontabbers.stable.example.com`)).status, 200);
});

t.test('deleting a CRD deletes its custom resources first', async (t) => {
  // A finalizer holds one resource: the CRD waits, and creates are refused meanwhile.
  const r0 = await c.request('POST', CT, { body: { ...crontab('held', { cronSpec: '* * * * *' }), metadata: { name: 'held', finalizers: ['example.com/hold'] } } });
  t.equal(r0.status, 201);
  const d = await c.request('DELETE', `${CRDS}/crontabs.stable.example.com`);
  t.equal(d.status, 200);
  t.ok(d.json.metadata.deletionTimestamp, 'marked for deletion');
  await waitFor('others deleted', async () => {
    const l = await c.request('GET', CT);
    return l.json.items.length === 1 ? true : undefined;
  });
  const terminating = (await c.request('GET', `${CRDS}/crontabs.stable.example.com`)).json;
  t.match(terminating.status.conditions, [{}, {}, { type: 'Terminating', status: 'True', reason: 'InstanceDeletionInProgress' }]);
  const refused: Reply = await c.request('POST', CT, { body: crontab('late', { cronSpec: '* * * * *' }) });
  t.equal(refused.status, 405);
  t.match(refused.json.message, /create not allowed while custom resource definition is terminating/);
  await c.request('PATCH', `${CT}/held`, { raw: JSON.stringify({ metadata: { finalizers: null } }), contentType: 'application/merge-patch+json' });
  await waitFor('CRD gone', async () => ((await c.request('GET', `${CRDS}/crontabs.stable.example.com`)).status === 404 ? true : undefined));
  await waitFor('resource gone', async () => ((await c.request('GET', CT)).status === 404 ? true : undefined));
  t.notOk((await c.request('GET', '/apis')).json.groups.some((g: Any) => g.name === 'stable.example.com'), 'the group left discovery');
});

t.test('custom resources are served again after a restart', async (t) => {
  const tmp = await mkdtemp(join(tmpdir(), 'corectl-crd-'));
  t.teardown(() => rm(tmp, { recursive: true, force: true }));
  const args = [`--data-dir=${join(tmp, 'data')}`];
  const first = await startApiserver({ args });
  const c1 = await connectClient(first);
  t.equal((await c1.request('POST', CRDS, { body: crontabCrd() })).status, 201);
  await established(c1, 'crontabs.stable.example.com');
  await served(c1, CT);
  t.equal((await c1.request('POST', CT, { body: crontab('kept', { cronSpec: '* * * * *' }) })).status, 201);
  c1.close();
  await first.stop();
  const second = await startApiserver({ args });
  const c2 = await connectClient(second);
  t.teardown(async () => { c2.close(); await second.stop(); });
  const r = await c2.request('GET', `${CT}/kept`);
  t.equal(r.status, 200, 'served as soon as the server is up');
  t.equal(r.json.spec.replicas, 1);
});
