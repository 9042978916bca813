/**
 * scheduling.k8s.io/v1 PriorityClass, node.k8s.io/v1 RuntimeClass and networking.k8s.io/v1
 * IngressClass through the real API server: the built-in priority classes, validation with
 * Kubernetes' field paths and wording, immutability, defaults, tables, discovery, and the
 * Priority admission plugin resolving pods' priorities from PriorityClass objects.
 */
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';
import { storeMirror } from '../../src/storage/store-mirror.js';
import { connectClient, type Reply, type RestClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const PC = '/apis/scheduling.k8s.io/v1/priorityclasses';
const RC = '/apis/node.k8s.io/v1/runtimeclasses';
const IC = '/apis/networking.k8s.io/v1/ingressclasses';
const PODS = '/api/v1/namespaces/default/pods';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

const priorityClass = (name: string, fields: Obj = {}): Obj => ({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, ...fields });
const runtimeClass = (name: string, fields: Obj = {}): Obj => ({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name }, handler: 'runc', ...fields });
const ingressClass = (name: string, spec: Obj = {}): Obj => ({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name }, spec: { controller: 'example.com/ingress-controller', ...spec } });
const pod = (name: string, spec: Obj = {}): Obj => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec } });

async function server(t: Test, args: string[] = []): Promise<{ a: StartedApiserver; c: RestClient }> {
  const a = await startApiserver({ args });
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  return { a, c };
}

/** A 422's causes as [field, message] pairs. */
const causes = (r: Reply): Array<[string, string]> => (r.json?.details?.causes ?? []).map((x: Any) => [x.field, x.message]);

/** Creates and answers the 422's causes (failing the test when the create did not fail so). */
async function invalid(t: Test, c: RestClient, path: string, body: Obj): Promise<Array<[string, string]>> {
  const r = await c.request('POST', path, { body });
  t.equal(r.status, 422, `refused: ${JSON.stringify(body)}`);
  t.equal(r.json?.reason, 'Invalid');
  return causes(r);
}

async function update(c: RestClient, path: string, change: (o: Any) => void): Promise<Reply> {
  const o = (await c.request('GET', path)).json;
  change(o);
  return c.request('PUT', path, { body: o });
}

t.test('the built-in priority classes exist, cannot be deleted, and come back on restart', async (t) => {
  const tmp = await mkdtemp(join(tmpdir(), 'corectl-priorityclasses-'));
  t.teardown(() => rm(tmp, { recursive: true, force: true }));
  const dataDir = `--data-dir=${join(tmp, 'data')}`;

  let a = await startApiserver({ args: [dataDir] });
  let c = await connectClient(a);
  const node = (await c.request('GET', `${PC}/system-node-critical`)).json;
  t.match(node, {
    metadata: { name: 'system-node-critical', generation: 1 }, value: 2000001000, preemptionPolicy: 'PreemptLowerPriority',
    description: 'Used for system critical pods that must not be moved from their current node.',
  });
  t.equal(node.globalDefault, undefined, 'not the global default');
  t.match((await c.request('GET', `${PC}/system-cluster-critical`)).json, { value: 2000000000, preemptionPolicy: 'PreemptLowerPriority' });
  const del = await c.request('DELETE', `${PC}/system-node-critical`);
  t.equal(del.status, 403);
  t.equal(del.json.message, 'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted');
  c.close();
  await a.stop();

  // A restart leaves existing classes as they are.
  a = await startApiserver({ args: [dataDir] });
  c = await connectClient(a);
  t.equal((await c.request('GET', `${PC}/system-node-critical`)).json.metadata.uid, node.metadata.uid, 'same object after a restart');
  c.close();
  await a.stop();

  // The refusal does not depend on the Priority plugin (Kubernetes puts it in storage).
  a = await startApiserver({ args: [dataDir, '--disable-admission-plugins=ServiceAccount,Priority'] });
  c = await connectClient(a);
  t.equal((await c.request('DELETE', `${PC}/system-node-critical`)).status, 403, 'refused with the plugin off too');
  // Gone from the store all the same (by hand): the next start creates it again.
  await a.parts!.store.delete({ group: 'scheduling.k8s.io', resource: 'priorityclasses', namespace: '', name: 'system-node-critical' });
  t.equal((await c.request('GET', `${PC}/system-node-critical`)).status, 404);
  c.close();
  await a.stop();

  a = await startApiserver({ args: [dataDir] });
  c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  const again = (await c.request('GET', `${PC}/system-node-critical`)).json;
  t.equal(again.value, 2000001000, 'created again on start');
  t.not(again.metadata.uid, node.metadata.uid);
});

t.test('PriorityClass: defaults, validation, immutability and the table', async (t) => {
  const { c } = await server(t);
  const high = await c.request('POST', PC, { body: priorityClass('high', { value: 1000, description: 'important' }) });
  t.equal(high.status, 201);
  t.match(high.json, { value: 1000, preemptionPolicy: 'PreemptLowerPriority', metadata: { generation: 1 } }, 'preemptionPolicy defaulted');
  t.equal((await c.request('POST', PC, { body: priorityClass('zero') })).json.value, 0, 'value is optional and then 0');
  t.equal((await c.request('POST', PC, { body: priorityClass('top', { value: 1_000_000_000 }) })).status, 201, 'the highest user value is allowed');
  t.equal((await c.request('POST', PC, { body: priorityClass('low', { value: -5, preemptionPolicy: 'Never' }) })).status, 201, 'negative values and Never are allowed');

  const tooHigh = await c.request('POST', PC, { body: priorityClass('too-high', { value: 1_000_000_001 }) });
  t.equal(tooHigh.status, 422);
  t.equal(tooHigh.json.message, 'PriorityClass.scheduling.k8s.io "too-high" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000');
  t.same(await invalid(t, c, PC, priorityClass('system-foo', { value: 10 })),
    [['metadata.name', "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-foo is not a known system priority class"]]);
  t.same(await invalid(t, c, PC, priorityClass('system-node-critical', { value: 10 })),
    [['metadata.name', "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000"]]);
  t.same(await invalid(t, c, PC, priorityClass('system-cluster-critical', { value: 2000000000, globalDefault: true })),
    [['metadata.name', "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-cluster-critical PriorityClass must be false"]]);
  t.same(await invalid(t, c, PC, priorityClass('odd', { value: 1, preemptionPolicy: 'Sometimes' })),
    [['preemptionPolicy', 'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"']]);
  t.same(await invalid(t, c, PC, priorityClass('empty', { value: 1, preemptionPolicy: '' })), [['preemptionPolicy', 'Required value']]);

  const path = `${PC}/high`;
  let r = await update(c, path, (o) => { o.value = 2000; });
  t.equal(r.status, 422);
  t.same(causes(r), [['value', 'Forbidden: may not be changed in an update.']]);
  r = await update(c, path, (o) => { o.preemptionPolicy = 'Never'; });
  t.same(causes(r), [['preemptionPolicy', 'Invalid value: "Never": field is immutable']]);
  r = await update(c, path, (o) => { delete o.preemptionPolicy; o.description = 'changed'; });
  t.equal(r.status, 200, 'a body without the policy gets the default, which it already has');
  t.match(r.json, { description: 'changed', preemptionPolicy: 'PreemptLowerPriority', metadata: { generation: 1 } }, 'generation stays 1');

  const table = (await c.request('GET', PC, { accept: TABLE })).json;
  t.same(table.columnDefinitions.map((d: Any) => [d.name, d.type, d.priority]),
    [['Name', 'string', 0], ['Value', 'integer', 0], ['Global-Default', 'boolean', 0], ['Age', 'string', 0], ['PreemptionPolicy', 'string', 0]]);
  const row = (name: string): Any[] => table.rows.find((x: Any) => x.cells[0] === name).cells;
  t.same([row('system-node-critical')[1], row('system-node-critical')[2], row('system-node-critical')[4]], [2000001000, false, 'PreemptLowerPriority']);
  t.same([row('low')[1], row('low')[4]], [-5, 'Never']);
  t.match(row('high')[3], /^\d+s$/, 'AGE between GLOBAL-DEFAULT and PREEMPTIONPOLICY');
});

t.test('only one PriorityClass is the global default, and pods naming no class get it', async (t) => {
  const { a, c } = await server(t);
  // Pods get the default class from the server's mirror of the classes (as Kubernetes' plugin
  // reads its informer): the test waits until the mirror has seen a change before relying on it.
  const mirror = storeMirror(a.parts!.store, 'scheduling.k8s.io', 'priorityclasses');
  const none = await c.request('POST', PODS, { body: pod('before') });
  t.equal(none.status, 201);
  t.match(none.json.spec, { priority: 0, preemptionPolicy: 'PreemptLowerPriority' }, 'no default class: priority 0');
  t.equal(none.json.spec.priorityClassName, undefined);

  t.equal((await c.request('POST', PC, { body: priorityClass('standard', { value: 100, globalDefault: true, preemptionPolicy: 'Never' }) })).status, 201);
  const second = await c.request('POST', PC, { body: priorityClass('other', { value: 50, globalDefault: true }) });
  t.equal(second.status, 403);
  t.equal(second.json.message, 'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass standard is already marked as default. Only one default can exist');
  t.equal((await c.request('POST', PC, { body: priorityClass('other', { value: 50 }) })).status, 201);
  const promote = await update(c, `${PC}/other`, (o) => { o.globalDefault = true; });
  t.equal(promote.status, 403, 'another class may not become the default either');
  t.match(promote.json.message, /PriorityClass standard is already marked as default/);
  const described = await update(c, `${PC}/standard`, (o) => { o.description = 'the default'; });
  t.equal(described.status, 200, 'the default class itself may change');
  await waitFor('the default class mirrored', () => mirror.has('standard', described.json.metadata.resourceVersion));

  const p = await c.request('POST', PODS, { body: pod('after') });
  t.equal(p.status, 201);
  t.match(p.json.spec, { priorityClassName: 'standard', priority: 100, preemptionPolicy: 'Never' }, 'the default class, its name included');
  const forged = await c.request('POST', PODS, { body: pod('forged', { priority: 7 }) });
  t.equal(forged.status, 403);
  t.equal(forged.json.message, 'pods "forged" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 100 from the given PriorityClass name');

  // Once the default is gone, pods get 0 again.
  t.equal((await c.request('DELETE', `${PC}/standard`)).status, 200);
  await waitFor('the default class gone from the mirror', () => !mirror.has('standard'));
  t.equal((await c.request('POST', PODS, { body: pod('later') })).json.spec.priority, 0);
  t.equal((await update(c, `${PC}/other`, (o) => { o.globalDefault = true; })).status, 200, 'now another may become the default');
});

t.test('pods: the named class gives priority and preemption policy', async (t) => {
  const { c } = await server(t);
  t.equal((await c.request('POST', PC, { body: priorityClass('batch', { value: 500, preemptionPolicy: 'Never' }) })).status, 201);
  const p = await c.request('POST', PODS, { body: pod('job', { priorityClassName: 'batch' }) });
  t.equal(p.status, 201, 'a class created a moment before is found');
  t.match(p.json.spec, { priorityClassName: 'batch', priority: 500, preemptionPolicy: 'Never' });
  t.equal((await c.request('POST', PODS, { body: pod('same', { priorityClassName: 'batch', priority: 500, preemptionPolicy: 'Never' }) })).status, 201,
    'the values the class gives are accepted');
  const policy = await c.request('POST', PODS, { body: pod('policy', { priorityClassName: 'batch', preemptionPolicy: 'PreemptLowerPriority' }) });
  t.equal(policy.status, 403);
  t.equal(policy.json.message, 'pods "policy" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name');
  const unknown = await c.request('POST', PODS, { body: pod('unknown', { priorityClassName: 'gold' }) });
  t.equal(unknown.status, 403);
  t.equal(unknown.json.message, 'pods "unknown" is forbidden: no PriorityClass with name gold was found');
  t.equal((await c.request('POST', PODS, { body: pod('crit', { priorityClassName: 'system-node-critical' }) })).json.spec.priority, 2000001000,
    'the built-in classes are objects like any other');

  // An update that leaves out what the plugin set keeps it.
  const r = await update(c, `${PODS}/job`, (o) => { delete o.spec.priority; delete o.spec.preemptionPolicy; o.metadata.labels = { touched: 'yes' }; });
  t.equal(r.status, 200);
  t.match(r.json, { metadata: { labels: { touched: 'yes' } }, spec: { priority: 500, preemptionPolicy: 'Never' } });
});

t.test('RuntimeClass: validation as Kubernetes does it, handler immutable, table', async (t) => {
  const { c } = await server(t);
  const ok = await c.request('POST', RC, { body: runtimeClass('gvisor', {
    handler: 'runsc',
    overhead: { podFixed: { cpu: '250m', memory: '120Mi', 'example.com/device': '1' } },
    scheduling: { nodeSelector: { 'runtime.example.com/sandboxed': 'true' }, tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }] },
  }) });
  t.equal(ok.status, 201);
  t.equal(ok.json.metadata.generation, undefined, 'no generation');

  const label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  t.same(await invalid(t, c, RC, runtimeClass('nohandler', { handler: undefined })), [['handler', `Invalid value: "": ${label}`]], 'handler is required');
  t.same(await invalid(t, c, RC, runtimeClass('badhandler', { handler: 'Run_C' })), [['handler', `Invalid value: "Run_C": ${label}`]]);

  t.same(await invalid(t, c, RC, runtimeClass('badname', { overhead: { podFixed: { 'my.org': '10m' } } })), [
    ['overhead.limits[my.org]', 'Invalid value: "my.org": must be a standard resource type or fully qualified'],
    ['overhead.limits[my.org]', 'Invalid value: "my.org": must be a standard resource for containers'],
  ], 'podFixed is checked as container limits, under their path');
  t.same(await invalid(t, c, RC, runtimeClass('negative', { overhead: { podFixed: { cpu: '-1' } } })),
    [['overhead.limits[cpu]', 'Invalid value: "-1": must be greater than or equal to 0']]);
  t.same(await invalid(t, c, RC, runtimeClass('fraction', { overhead: { podFixed: { 'example.com/gpu': '500m' } } })),
    [['overhead.limits[example.com/gpu]', 'Invalid value: "500m": must be an integer']]);
  t.same(await invalid(t, c, RC, runtimeClass('pages', { overhead: { podFixed: { 'hugepages-2Mi': '3Mi' } } })), [
    ['overhead.limits[hugepages-2Mi]', 'Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi'],
    ['overhead', 'Forbidden: HugePages require cpu or memory'],
  ]);
  t.same(await invalid(t, c, RC, runtimeClass('garbage', { overhead: { podFixed: { cpu: 'lots' } } })),
    [['overhead.limits[cpu]', "Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]]);

  const selector = await invalid(t, c, RC, runtimeClass('selector', { scheduling: { nodeSelector: { 'not a key!': 'x' } } }));
  t.same(selector.map(([f]) => f), ['scheduling.nodeSelector']);
  t.same(await invalid(t, c, RC, runtimeClass('tolerations', { scheduling: { tolerations: [
    { operator: 'Equal', value: 'x' },
    { key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 },
    { key: 'k', operator: 'Bogus' },
    { key: 'k', effect: 'Sometimes' },
    { key: 'k', operator: 'Exists', value: 'v' },
  ] } })), [
    ['scheduling.tolerations[0].operator', 'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"'],
    ['scheduling.tolerations[1].effect', 'Invalid value: "NoSchedule": effect must be \'NoExecute\' when `tolerationSeconds` is set'],
    ['scheduling.tolerations[2].operator', 'Unsupported value: "Bogus": supported values: "Equal", "Exists"'],
    ['scheduling.tolerations[3].effect', 'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'],
    ['scheduling.tolerations[4].operator', 'Invalid value: "v": value must be empty when `operator` is \'Exists\''],
  ]);
  const dup = await invalid(t, c, RC, runtimeClass('dup', { scheduling: { tolerations: [{ key: 'k', operator: 'Exists' }, { key: 'k', operator: 'Exists' }] } }));
  t.same(dup.map(([f, m]) => [f, m.split(':')[0]]), [['scheduling.tolerations[1]', 'Duplicate value']]);

  let r = await update(c, `${RC}/gvisor`, (o) => { o.handler = 'crun'; });
  t.equal(r.status, 422);
  t.same(causes(r), [['handler', 'Invalid value: "crun": field is immutable']]);
  r = await update(c, `${RC}/gvisor`, (o) => { o.overhead.podFixed.cpu = '-2'; });
  t.same(causes(r), [['overhead.limits[cpu]', 'Invalid value: "-2": must be greater than or equal to 0']], 'the whole object is checked again on update');
  r = await update(c, `${RC}/gvisor`, (o) => { o.overhead.podFixed.cpu = '500m'; });
  t.equal(r.status, 200);

  const table = (await c.request('GET', RC, { accept: TABLE })).json;
  t.same(table.columnDefinitions.map((d: Any) => d.name), ['Name', 'Handler', 'Age']);
  t.same(table.rows[0].cells.slice(0, 2), ['gvisor', 'runsc']);
});

t.test('IngressClass: defaults, validation, controller immutable, generation, table', async (t) => {
  const { c } = await server(t);
  const params = { apiGroup: 'k8s.example.com', kind: 'IngressParameters', name: 'external-lb' };
  const ok = await c.request('POST', IC, { body: ingressClass('external', { parameters: params }) });
  t.equal(ok.status, 201);
  t.match(ok.json, { metadata: { generation: 1 }, spec: { parameters: { ...params, scope: 'Cluster' } } }, 'scope defaults to Cluster');
  t.equal((await c.request('POST', IC, { body: ingressClass('plain') })).status, 201);
  t.equal((await c.request('POST', IC, { body: ingressClass('ns', { parameters: { kind: 'P', name: 'p', scope: 'Namespace', namespace: 'ingress' } }) })).status, 201);

  t.same(await invalid(t, c, IC, ingressClass('nocontroller', { controller: undefined })), [['spec.controller', 'Required value']]);
  t.same(await invalid(t, c, IC, ingressClass('bare', { controller: 'nginx' })), [['spec.controller', 'Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")']]);
  const upper = await invalid(t, c, IC, ingressClass('upper', { controller: 'Example.com/x' }));
  t.same(upper.map(([f, m]) => [f, m.slice(0, 30)]), [['spec.controller', 'Invalid value: "Example.com": ']], 'the domain part is a DNS subdomain');
  t.same(await invalid(t, c, IC, ingressClass('spaces', { controller: 'example.com/a b' })),
    [['spec.controller', "Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"]]);
  t.same(await invalid(t, c, IC, ingressClass('long', { controller: `example.com/${'x'.repeat(240)}` })), [['spec.controller', 'Too long: may not be more than 250 bytes']]);

  t.same(await invalid(t, c, IC, ingressClass('noref', { parameters: { apiGroup: 'Bad_Group' } })), [
    ['spec.parameters.apiGroup', "Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"],
    ['spec.parameters.kind', 'Required value: kind is required'],
    ['spec.parameters.name', 'Required value: name is required'],
  ]);
  t.same(await invalid(t, c, IC, ingressClass('slash', { parameters: { kind: 'a/b', name: '..' } })), [
    ['spec.parameters.kind', 'Invalid value: "a/b": may not contain \'/\''],
    ['spec.parameters.name', 'Invalid value: "..": may not be \'..\''],
  ]);
  t.same(await invalid(t, c, IC, ingressClass('scope', { parameters: { kind: 'P', name: 'p', scope: 'Galaxy' } })),
    [['spec.parameters.scope', 'Unsupported value: "Galaxy": supported values: "Cluster", "Namespace"']]);
  t.same(await invalid(t, c, IC, ingressClass('nons', { parameters: { kind: 'P', name: 'p', scope: 'Namespace' } })),
    [['spec.parameters.namespace', "Required value: `parameters.scope` is set to 'Namespace'"]]);
  const badNs = await invalid(t, c, IC, ingressClass('badns', { parameters: { kind: 'P', name: 'p', scope: 'Namespace', namespace: 'Bad_NS' } }));
  t.same(badNs.map(([f]) => f), ['spec.parameters.namespace']);
  t.same(await invalid(t, c, IC, ingressClass('clusterns', { parameters: { kind: 'P', name: 'p', scope: 'Cluster', namespace: 'x' } })),
    [['spec.parameters.namespace', "Forbidden: `parameters.scope` is set to 'Cluster'"]]);

  let r = await update(c, `${IC}/external`, (o) => { o.spec.controller = 'example.com/other'; });
  t.equal(r.status, 422);
  t.same(causes(r), [['spec.controller', 'Invalid value: "example.com/other": field is immutable']]);
  r = await update(c, `${IC}/external`, (o) => { o.spec.parameters.name = 'internal-lb'; });
  t.equal(r.status, 200, 'parameters may change');
  t.equal(r.json.metadata.generation, 2, 'a spec change bumps the generation');
  r = await update(c, `${IC}/external`, (o) => { o.metadata.labels = { a: 'b' }; });
  t.equal(r.json.metadata.generation, 2, 'a metadata change does not');

  const table = (await c.request('GET', IC, { accept: TABLE })).json;
  t.same(table.columnDefinitions.map((d: Any) => d.name), ['Name', 'Controller', 'Parameters', 'Age']);
  const cells = (name: string): Any[] => table.rows.find((x: Any) => x.cells[0] === name).cells.slice(0, 3);
  t.same(cells('external'), ['external', 'example.com/ingress-controller', 'IngressParameters.k8s.example.com/internal-lb']);
  t.same(cells('ns'), ['ns', 'example.com/ingress-controller', 'P/p']);
  t.same(cells('plain'), ['plain', 'example.com/ingress-controller', '<none>']);
});

t.test('discovery serves the three kinds', async (t) => {
  const { c } = await server(t);
  const groups = (await c.request('GET', '/apis')).json.groups as Any[];
  for (const name of ['scheduling.k8s.io', 'node.k8s.io']) {
    t.match(groups.find((g) => g.name === name), { preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' } }, name);
  }
  const resource = async (gv: string, name: string): Promise<Any> =>
    ((await c.request('GET', `/apis/${gv}`)).json.resources as Any[]).find((r) => r.name === name);
  t.match(await resource('scheduling.k8s.io/v1', 'priorityclasses'), { kind: 'PriorityClass', namespaced: false, shortNames: ['pc'], singularName: 'priorityclass' });
  t.match(await resource('node.k8s.io/v1', 'runtimeclasses'), { kind: 'RuntimeClass', namespaced: false });
  t.match(await resource('networking.k8s.io/v1', 'ingressclasses'), { kind: 'IngressClass', namespaced: false });
  t.ok(await resource('networking.k8s.io/v1', 'ingresses'), 'beside ingresses');
});
