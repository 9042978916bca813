// The OpenAPI documents generated from the one schema: the facts kubectl reads (patch
// operations with fieldValidation and the kind's group/version/kind, schemas with GVKs and
// patch metadata), references that resolve, the v2 protobuf read back, and the HTTP handler.
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { load } from 'js-yaml';
import t from 'tap';
import { allResources } from '../../src/api/resources/registry.js';
import { fieldSchema, type JsonSchema } from '../../src/api/openapi/schemas.js';
import { buildAllGroupVersionsV3, buildIndexV3, groupVersionKey } from '../../src/api/openapi/v3.js';
import { buildOpenApiV2 } from '../../src/api/openapi/v2.js';
import { decodeOpenApiV2, encodeOpenApiV2, OPENAPI_V2_PROTOBUF_ACCEPT, OPENAPI_V2_PROTOBUF_CONTENT_TYPE } from '../../src/api/openapi/v2-protobuf.js';
import { groupVersionPath } from '../../src/api/openapi/paths.js';
import { OpenApiHandler } from '../../src/daemons/apiserver/rest/openapi-handler.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const docs = buildAllGroupVersionsV3();
const v2 = buildOpenApiV2() as Obj;

function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((x) => refs(x, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) { if (k === '$ref' && typeof v === 'string') out.push(v); else refs(v, out); }
  }
  return out;
}

function itemPath(group: string, version: string, plural: string, namespaced: boolean): string {
  return `${groupVersionPath(group, version)}${namespaced ? '/namespaces/{namespace}' : ''}/${plural}/{name}`;
}

t.test('a v3 document for every served group/version', async (t) => {
  const expected = new Set<string>();
  for (const d of allResources()) for (const v of d.versions) expected.add(groupVersionKey(d.group, v));
  t.same([...docs.keys()].sort(), [...expected].sort());
  for (const [key, doc] of docs) {
    t.equal((doc as Obj).openapi, '3.0.0', key);
    const schemas = (doc as Obj).components.schemas as Obj;
    const unresolved = refs(doc).filter((r) => !(r.startsWith('#/components/schemas/') && schemas[r.slice('#/components/schemas/'.length)]));
    t.same(unresolved, [], `${key}: every $ref resolves`);
  }
});

t.test('kubectl facts: patch operations advertise fieldValidation and the kind', async (t) => {
  for (const d of allResources()) {
    for (const v of d.versions) {
      const doc = docs.get(groupVersionKey(d.group, v)) as Obj;
      const p = doc.paths[itemPath(d.group, v, d.plural, d.namespaced)];
      if (!d.verbs.includes('patch')) continue;
      const patch = p?.patch;
      t.ok(patch, `${d.group}/${v} ${d.plural} has a patch operation`);
      if (!patch) continue;
      t.same(patch['x-kubernetes-group-version-kind'], { group: d.group, version: v, kind: d.kind });
      t.ok((patch.parameters as Obj[]).some((x) => x.name === 'fieldValidation' && x.in === 'query'), `${d.plural} patch has fieldValidation`);
      // Kinds without a schema declaration (CRDs, custom resources) take no strategic merge patch.
      t.equal(Object.keys(patch.requestBody.content).includes('application/strategic-merge-patch+json'), !d.openApi, `${d.plural} strategic merge advertised as accepted`);
      // kubectl explain finds the kind's schema by its x-kubernetes-group-version-kind.
      const kindSchemas = Object.values(doc.components.schemas as Obj).filter((s: Obj) =>
        (s['x-kubernetes-group-version-kind'] ?? []).some((g: Obj) => g.group === d.group && g.version === v && g.kind === d.kind));
      t.equal(kindSchemas.length, 1, `${d.kind} schema in ${d.group}/${v}`);
      const verbs = Object.keys(p);
      if (d.verbs.includes('get')) t.ok(verbs.includes('get'));
      if (d.verbs.includes('update')) t.ok(verbs.includes('put'));
      if (d.verbs.includes('delete')) t.ok(verbs.includes('delete'));
    }
  }
  const core = docs.get('api/v1') as Obj;
  t.ok(core.paths['/api/v1/namespaces/{namespace}/pods'].post.parameters.some((x: Obj) => x.name === 'fieldValidation'));
  t.equal(core.paths['/api/v1/namespaces/{namespace}/pods'].get['x-kubernetes-action'], 'list');
  t.equal(core.paths['/api/v1/namespaces/{namespace}/pods'].delete['x-kubernetes-action'], 'deletecollection');
  t.equal(core.paths['/api/v1/pods'].get.operationId, 'listCoreV1PodForAllNamespaces');
  t.equal(core.paths['/api/v1/watch/namespaces/{namespace}/pods/{name}'].get['x-kubernetes-action'], 'watch');
  t.same(core.paths['/api/v1/namespaces/{namespace}/pods/{name}/status'].patch['x-kubernetes-group-version-kind'], { group: '', version: 'v1', kind: 'Pod' });
  const apps = docs.get('apis/apps/v1') as Obj;
  t.same(apps.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale'].patch['x-kubernetes-group-version-kind'], { group: 'autoscaling', version: 'v1', kind: 'Scale' });
  t.equal(apps.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch.operationId, 'patchAppsV1NamespacedDeployment');
  t.equal(core.paths['/api/v1/nodes/{name}'].get.operationId, 'readCoreV1Node');
});

t.test('schemas: names, types, formats, extensions, special types', async (t) => {
  const s = (docs.get('api/v1') as Obj).components.schemas as Obj;
  const podSchema = s['io.k8s.api.core.v1.Pod'];
  t.same(podSchema['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Pod', version: 'v1' }]);
  t.same(podSchema.properties.apiVersion, { type: 'string', description: podSchema.properties.apiVersion.description });
  t.same(podSchema.properties.metadata, { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' });
  const container = s['io.k8s.api.core.v1.Container'];
  t.ok(container.required.includes('name'));
  t.match(container.properties.ports, {
    type: 'array', items: { $ref: '#/components/schemas/io.k8s.api.core.v1.ContainerPort' },
    'x-kubernetes-patch-merge-key': 'containerPort', 'x-kubernetes-patch-strategy': 'merge',
    'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
  });
  t.same(s['io.k8s.api.core.v1.ContainerPort'].properties.containerPort, { type: 'integer', format: 'int32' });
  t.same(s['io.k8s.api.core.v1.PodSpec'].properties.activeDeadlineSeconds, { type: 'integer', format: 'int64' });
  t.same(s['io.k8s.api.core.v1.PodSpec'].properties.nodeSelector, { type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-map-type': 'atomic' });
  t.same(s['io.k8s.api.core.v1.Secret'].properties.data, { type: 'object', additionalProperties: { type: 'string', format: 'byte' } });
  t.match(s['io.k8s.apimachinery.pkg.apis.meta.v1.Time'], { type: 'string', format: 'date-time' });
  t.match(s['io.k8s.apimachinery.pkg.api.resource.Quantity'], { type: 'string' });
  t.match(s['io.k8s.apimachinery.pkg.util.intstr.IntOrString'], { type: 'string', format: 'int-or-string', 'x-kubernetes-int-or-string': true });
  t.match(s['io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1'], { type: 'object' });
  t.notOk(s['io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1'].properties);
  // Volume.volumeSource is inline: its members are the volume's own properties.
  const volume = s['io.k8s.api.core.v1.Volume'].properties;
  t.ok(volume.name && volume.emptyDir && volume.configMap && !volume.volumeSource);
  t.notOk(s['io.k8s.api.core.v1.VolumeSource'], 'an inline-only type needs no definition');
  // Enums, where declared.
  t.same(fieldSchema({ name: 'p', number: 1, type: { scalar: 'string' }, enum: ['A', 'B'] }, 'v3'), { type: 'string', enum: ['A', 'B'] });
  t.same(fieldSchema({ name: 'm', number: 1, type: { message: 'k8s.io.api.core.v1.PodSpec' }, description: 'd' }, 'v3'),
    { allOf: [{ $ref: '#/components/schemas/io.k8s.api.core.v1.PodSpec' }], description: 'd' });
  const apps = (docs.get('apis/apps/v1') as Obj).components.schemas as Obj;
  t.match(apps['io.k8s.api.apps.v1.DeploymentSpec'].properties.replicas, { type: 'integer', format: 'int32' });
  t.ok(apps['io.k8s.api.core.v1.PodTemplateSpec'], 'types from other packages are included');
  t.ok(apps['io.k8s.api.apps.v1.Deployment']['x-kubernetes-group-version-kind'].some((g: Obj) => g.group === 'apps' && g.kind === 'Deployment'));
});

t.test('index hashes are content hashes', async (t) => {
  const hashes = new Map([...docs].map(([k, d]) => [k, createHash('sha512').update(JSON.stringify(d)).digest('hex').toUpperCase()]));
  const index = buildIndexV3(hashes) as Obj;
  t.same(index.paths['api/v1'], { serverRelativeURL: `/openapi/v3/api/v1?hash=${hashes.get('api/v1')}` });
  t.ok(index.paths['apis/apps/v1']);
});

t.test('v2: JSON document and its protobuf form', async (t) => {
  t.equal(v2.swagger, '2.0');
  t.same(refs(v2).filter((r) => !(r.startsWith('#/definitions/') && v2.definitions[r.slice('#/definitions/'.length)])), [], 'every $ref resolves');
  const patch = v2.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch;
  t.ok(patch.parameters.some((p: Obj) => p.name === 'fieldValidation' && p.in === 'query' && p.type === 'string'));
  t.ok(patch.parameters.some((p: Obj) => p.in === 'body'));
  t.same(patch['x-kubernetes-group-version-kind'], { group: 'apps', kind: 'Deployment', version: 'v1' });

  const pb = decodeOpenApiV2(encodeOpenApiV2(v2)) as Obj;
  t.equal(pb.swagger, '2.0');
  t.same(pb.info, { title: 'Kubernetes', version: v2.info.version });
  const podPath = (pb.paths.path as Obj[]).find((p) => p.name === '/api/v1/namespaces/{namespace}/pods/{name}')!.value;
  const params = podPath.patch.parameters as Obj[];
  const fv = params.find((p) => p.parameter?.nonBodyParameter?.queryParameterSubSchema?.name === 'fieldValidation');
  t.match(fv?.parameter.nonBodyParameter.queryParameterSubSchema, { in: 'query', type: 'string' });
  const gvk = (podPath.patch.vendorExtension as Obj[]).find((x) => x.name === 'x-kubernetes-group-version-kind');
  t.same(load(gvk!.value.yaml as string), { group: '', kind: 'Pod', version: 'v1' });
  t.ok(podPath.parameters.some((p: Obj) => p.parameter?.nonBodyParameter?.pathParameterSubSchema?.name === 'name'));
  const defs = pb.definitions.additionalProperties as Obj[];
  t.equal(defs.length, Object.keys(v2.definitions).length);
  const pod = defs.find((d) => d.name === 'io.k8s.api.core.v1.Pod')!.value;
  t.same(load(pod.vendorExtension.find((x: Obj) => x.name === 'x-kubernetes-group-version-kind').value.yaml), [{ group: '', kind: 'Pod', version: 'v1' }]);
  t.same(pod.type, { value: ['object'] });
  const container = defs.find((d) => d.name === 'io.k8s.api.core.v1.Container')!.value;
  const ports = (container.properties.additionalProperties as Obj[]).find((p) => p.name === 'ports')!.value;
  t.same(ports.items.schema[0], { ref: '#/definitions/io.k8s.api.core.v1.ContainerPort' });
  const ext = Object.fromEntries((ports.vendorExtension as Obj[]).map((x) => [x.name, load(x.value.yaml)]));
  t.same(ext, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['containerPort', 'protocol'], 'x-kubernetes-patch-merge-key': 'containerPort', 'x-kubernetes-patch-strategy': 'merge' });
  t.ok(container.required.includes('name'));
  const labels = (defs.find((d) => d.name === 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta')!.value.properties.additionalProperties as Obj[]).find((p) => p.name === 'labels')!.value;
  t.same(labels.additionalProperties, { schema: { type: { value: ['string'] } } });
});

t.test('HTTP handler: negotiation, hashes, caching', async (t) => {
  const handler = new OpenApiHandler();
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (handler.handles(u.pathname)) handler.serve(req, res, u.pathname, u.searchParams);
    else { res.statusCode = 404; res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path, headers, method }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });

  const idx = await get('/openapi/v3', { accept: 'application/json' });
  t.equal(idx.status, 200);
  t.equal(idx.headers['content-type'], 'application/json');
  const index = JSON.parse(idx.body.toString()) as Obj;
  const url = index.paths['api/v1'].serverRelativeURL as string;
  t.match(url, /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
  const doc = await get(url, { accept: 'application/json' });
  t.equal(doc.status, 200);
  t.equal(createHash('sha512').update(doc.body).digest('hex').toUpperCase(), url.split('hash=')[1], 'the hash is the content hash');
  t.equal(doc.headers['cache-control'], 'public, immutable');
  t.ok(doc.headers['expires']);
  t.equal(doc.headers['etag'], `"${url.split('hash=')[1]}"`);
  t.equal((await get(url, { 'if-none-match': doc.headers['etag'] as string })).status, 304);
  const stale = await get('/openapi/v3/api/v1?hash=ABC');
  t.equal(stale.status, 301);
  t.equal(stale.headers['location'], url);
  const plain = await get('/openapi/v3/api/v1');
  t.equal(plain.headers['cache-control'], 'no-cache, private');
  t.equal(plain.body.length, doc.body.length);
  t.equal((await get('/openapi/v3/apis/nope/v1')).status, 404);
  t.equal((await get('/openapi/v3', {}, 'POST')).status, 405);
  t.equal((await get('/openapi/v3/apis/apps/v1', { 'accept-encoding': 'gzip' })).headers['content-encoding'], 'gzip');

  const pb = await get('/openapi/v2', { accept: `${OPENAPI_V2_PROTOBUF_ACCEPT},application/json` });
  t.equal(pb.status, 200);
  t.equal(pb.headers['content-type'], OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
  t.notMatch(pb.headers['content-type'], /@/);
  t.equal((decodeOpenApiV2(pb.body) as Obj).swagger, '2.0');
  const js = await get('/openapi/v2', { accept: 'application/json' });
  t.equal(js.headers['content-type'], 'application/json');
  t.equal((JSON.parse(js.body.toString()) as Obj).swagger, '2.0');
  t.equal((await get('/openapi/v2', { accept: 'text/html' })).status, 406);
});

void ({} as JsonSchema);
