// pods/ephemeralcontainers, as kubectl debug uses it: GET gives the Pod; PUT and PATCH change
// only spec.ephemeralContainers (defaulted as any container), and only by adding containers
// that are valid debugging containers. Pods cannot be created with them, pod templates cannot
// have them, and the main resource cannot change them.
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
const PODS = '/api/v1/namespaces/default/pods';
const SMP = 'application/strategic-merge-patch+json';
const pod = (name: string, spec: Obj = {}, meta: Obj = {}): Obj => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, ...meta },
  spec: { containers: [{ name: 'app', image: 'nginx:1.25' }], volumes: [{ name: 'data', emptyDir: {} }], ...spec },
});
const debug = (name: string, extra: Obj = {}): Obj => ({ name, image: 'busybox:1.36', command: ['sh'], stdin: true, tty: true, ...extra });
const addEphemeral = (...containers: Obj[]): string => JSON.stringify({ spec: { ephemeralContainers: containers } });

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

t.test('a pod cannot be created with ephemeral containers, nor a pod template have them', async (t) => {
  const r = await c.request('POST', PODS, { body: pod('born-with', { ephemeralContainers: [debug('dbg')] }) });
  t.equal(r.status, 422);
  t.match(r.json.details.causes, [{ field: 'spec.ephemeralContainers', reason: 'FieldValueForbidden', message: 'Forbidden: cannot be set on create' }]);
  const d = await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'tpl' },
    spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'app', image: 'nginx' }], ephemeralContainers: [debug('dbg')] } } },
  } });
  t.equal(d.status, 422);
  t.match(d.json.message, /spec\.template\.spec\.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template/);
});

t.test('GET, PATCH and PUT on pods/ephemeralcontainers', async (t) => {
  const created = await c.request('POST', PODS, { body: pod('target') });
  t.equal(created.status, 201);
  const got = await c.request('GET', `${PODS}/target/ephemeralcontainers`);
  t.equal(got.status, 200);
  t.equal(got.json.kind, 'Pod');
  t.equal(got.json.metadata.name, 'target');

  // What kubectl debug sends: a strategic merge patch of the Pod adding one container; other
  // changes in the body are dropped, not applied.
  const patch = JSON.stringify({ spec: { ephemeralContainers: [debug('debugger-1', { targetContainerName: 'app' })], containers: [{ name: 'app', image: 'nginx:2' }] }, status: { phase: 'Running' } });
  const p = await c.request('PATCH', `${PODS}/target/ephemeralcontainers`, { raw: patch, contentType: SMP });
  t.equal(p.status, 200, JSON.stringify(p.json?.message));
  t.same(p.json.spec.ephemeralContainers, [{
    name: 'debugger-1', image: 'busybox:1.36', command: ['sh'], stdin: true, tty: true, targetContainerName: 'app',
    imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', resources: {},
  }], 'added with the defaults of any container');
  t.equal(p.json.spec.containers[0].image, 'nginx:1.25', 'the containers are untouched');
  t.equal(p.json.status.phase, 'Pending', 'the status is untouched');
  t.ok(Number(p.json.metadata.resourceVersion) > Number(created.json.metadata.resourceVersion));

  // PUT of the whole Pod with a second one added (kubectl 1.22 and earlier, client libraries).
  const cur = (await c.request('GET', `${PODS}/target`)).json;
  cur.spec.ephemeralContainers.push(debug('debugger-2'));
  const put = await c.request('PUT', `${PODS}/target/ephemeralcontainers`, { body: cur });
  t.equal(put.status, 200, JSON.stringify(put.json?.message));
  t.same(put.json.spec.ephemeralContainers.map((x: Obj) => x.name), ['debugger-1', 'debugger-2']);
  t.same((await c.request('GET', `${PODS}/target`)).json.spec.ephemeralContainers.map((x: Obj) => x.name), ['debugger-1', 'debugger-2'], 'stored');
});

t.test('existing ephemeral containers may be neither removed nor changed', async (t) => {
  const cur = (await c.request('GET', `${PODS}/target`)).json;
  const removed = await c.request('PUT', `${PODS}/target/ephemeralcontainers`, { body: { ...cur, spec: { ...cur.spec, ephemeralContainers: [cur.spec.ephemeralContainers[0]] } } });
  t.equal(removed.status, 422);
  t.match(removed.json.message, /spec\.ephemeralContainers: Forbidden: existing ephemeral containers "debugger-2" may not be removed/);
  const changed = await c.request('PATCH', `${PODS}/target/ephemeralcontainers`, { raw: addEphemeral({ name: 'debugger-1', image: 'busybox:1.37' }), contentType: SMP });
  t.equal(changed.status, 422);
  t.match(changed.json.message, /existing ephemeral containers "debugger-1" may not be changed/);
  const viaMain = await c.request('PATCH', `${PODS}/target`, { raw: addEphemeral(debug('sneaky')), contentType: SMP });
  t.equal(viaMain.status, 422, 'the main resource cannot add one');
  t.match(viaMain.json.message, /pod updates may not change fields other than/);
});

t.test('what a debugging container may not be', async (t) => {
  t.equal((await c.request('POST', PODS, { body: pod('rules', { initContainers: [{ name: 'init', image: 'busybox:1.36' }] }) })).status, 201);
  const cases: [string, Obj, RegExp][] = [
    ['a name a container has', debug('app'), /spec\.ephemeralContainers\[0\]\.name: Duplicate value: "app"/],
    ['a name an init container has', debug('init'), /spec\.ephemeralContainers\[0\]\.name: Duplicate value: "init"/],
    ['an unknown target', debug('d', { targetContainerName: 'nope' }), /spec\.ephemeralContainers\[0\]\.targetContainerName: Not found: "nope"/],
    ['no image', { name: 'd' }, /spec\.ephemeralContainers\[0\]\.image: Required value/],
    ['ports', debug('d', { ports: [{ containerPort: 80 }] }), /spec\.ephemeralContainers\[0\]\.ports: Forbidden: cannot be set for an Ephemeral Container/],
    ['resources', debug('d', { resources: { limits: { cpu: '1' } } }), /spec\.ephemeralContainers\[0\]\.resources: Forbidden: cannot be set for an Ephemeral Container/],
    ['a probe', debug('d', { readinessProbe: { exec: { command: ['true'] } } }), /spec\.ephemeralContainers\[0\]\.readinessProbe: Forbidden: cannot be set for an Ephemeral Container/],
    ['a lifecycle hook', debug('d', { lifecycle: { preStop: { exec: { command: ['true'] } } } }), /spec\.ephemeralContainers\[0\]\.lifecycle: Forbidden/],
    ['a subPath', debug('d', { volumeMounts: [{ name: 'data', mountPath: '/d', subPath: 'x' }] }), /spec\.ephemeralContainers\[0\]\.volumeMounts\[0\]\.subPath: Forbidden: cannot be set for an Ephemeral Container/],
    ['an unknown volume', debug('d', { volumeMounts: [{ name: 'other', mountPath: '/d' }] }), /spec\.ephemeralContainers\[0\]\.volumeMounts\[0\]\.name: Not found: "other"/],
  ];
  for (const [what, ec, want] of cases) {
    const r = await c.request('PATCH', `${PODS}/rules/ephemeralcontainers`, { raw: addEphemeral(ec), contentType: SMP });
    t.equal(r.status, 422, what);
    t.match(r.json?.message, want, what);
  }
  const ok = await c.request('PATCH', `${PODS}/rules/ephemeralcontainers`, { raw: addEphemeral(debug('d', { targetContainerName: 'init', volumeMounts: [{ name: 'data', mountPath: '/d' }] })), contentType: SMP });
  t.equal(ok.status, 200, 'an init container is a valid target; volumes may be mounted');
});

t.test('static pods (mirror pods) take no ephemeral containers', async (t) => {
  const created = await c.request('POST', PODS, { body: pod('mirror', { nodeName: 'n1' }, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }) });
  t.equal(created.status, 201, JSON.stringify(created.json?.message));
  const r = await c.request('PATCH', `${PODS}/mirror/ephemeralcontainers`, { raw: addEphemeral(debug('d')), contentType: SMP });
  t.equal(r.status, 422);
  t.match(r.json.message, /static pods do not support ephemeral containers/);
});

t.test('other subresource verbs are refused', async (t) => {
  const r = await c.request('DELETE', `${PODS}/target/ephemeralcontainers`);
  t.equal(r.status, 405);
  t.equal(r.json.reason, 'MethodNotAllowed');
});
