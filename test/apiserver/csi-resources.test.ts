/**
 * storage.k8s.io/v1 CSIDriver, CSINode and CSIStorageCapacity through the real API server:
 * Kubernetes' defaults, validation with its field paths and wording, what may not change on
 * update, kubectl's table columns, discovery, and the Kubernetes HEAD fixtures.
 */
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply, type RestClient } from '../helpers/rest-client.js';

type Obj = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const GV = '/apis/storage.k8s.io/v1';
const DRV = `${GV}/csidrivers`;
const NODES = `${GV}/csinodes`;
const CAPS = `${GV}/namespaces/default/csistoragecapacities`;
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const FIXTURES = [join(process.cwd(), '..', 'shared', 'k8s-testdata', 'HEAD'), '/work/shared/k8s-testdata/HEAD'].find((d) => existsSync(d));

const driver = (name: string, spec: Obj = {}): Obj => ({ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name }, spec });
const nodeDriver = (name: string, extra: Obj = {}): Obj => ({ name, nodeID: `${name}-node-1`, topologyKeys: ['topology.kubernetes.io/zone'], ...extra });
const csiNode = (name: string, drivers: Obj[]): Obj => ({ apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name }, spec: { drivers } });
const capacity = (name: string, fields: Obj = {}): Obj => ({
  apiVersion: 'storage.k8s.io/v1', kind: 'CSIStorageCapacity', metadata: { name },
  storageClassName: 'fast', nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': 'a' } }, capacity: '10Gi', ...fields,
});

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const causes = (r: Reply): Array<[string, string]> => (r.json?.details?.causes ?? []).map((x: Any) => [x.field, x.message]);

async function invalid(t: Test, path: string, body: Obj): Promise<Array<[string, string]>> {
  const r = await c.request('POST', path, { body });
  t.equal(r.status, 422, `refused: ${JSON.stringify(body)}`);
  t.equal(r.json?.reason, 'Invalid');
  return causes(r);
}

async function update(path: string, change: (o: Any) => void): Promise<Reply> {
  const o = (await c.request('GET', path)).json;
  change(o);
  return c.request('PUT', path, { body: o });
}

async function table(path: string): Promise<{ columns: Array<[string, string]>; cells: (name: string) => Any[] }> {
  const tb = (await c.request('GET', path, { accept: TABLE })).json;
  return {
    columns: tb.columnDefinitions.map((d: Any) => [d.name, d.type]),
    cells: (name) => tb.rows.find((x: Any) => x.cells[0] === name).cells,
  };
}

t.test('CSIDriver: defaults as Kubernetes v1 fills them', async (t) => {
  const r = await c.request('POST', DRV, { body: driver('hostpath.csi.k8s.io') });
  t.equal(r.status, 201, JSON.stringify(r.json?.message));
  t.same(r.json.spec, {
    attachRequired: true, podInfoOnMount: false, storageCapacity: false, fsGroupPolicy: 'ReadWriteOnceWithFSType',
    volumeLifecycleModes: ['Persistent'], requiresRepublish: false, seLinuxMount: false,
  });
  t.equal(r.json.metadata.generation, 1);
  // What a client sets is kept.
  const set = await c.request('POST', DRV, { body: driver('set.example.com', { attachRequired: false, fsGroupPolicy: 'File', volumeLifecycleModes: ['Ephemeral', 'Persistent'] }) });
  t.match(set.json.spec, { attachRequired: false, fsGroupPolicy: 'File', volumeLifecycleModes: ['Ephemeral', 'Persistent'] });
});

t.test('CSIDriver: validation paths and messages', async (t) => {
  t.same(await invalid(t, DRV, driver('modes.example.com', { volumeLifecycleModes: ['Persistent', 'Forever'] })),
    [['spec.volumeLifecycleModes', 'Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"']]);
  t.same(await invalid(t, DRV, driver('fsgroup.example.com', { fsGroupPolicy: 'Sometimes' })),
    [['spec.fsGroupPolicy', 'Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"']]);
  t.same(await invalid(t, DRV, driver('tokens.example.com', {
    tokenRequests: [{ audience: 'vault' }, { audience: 'vault', expirationSeconds: 1 }, { audience: 'short', expirationSeconds: 599 }, { audience: 'long', expirationSeconds: 2 ** 32 + 1 }],
  })), [
    ['spec.tokenRequests[1].audience', 'Duplicate value: "vault"'],
    ['spec.tokenRequests[2].expirationSeconds', 'Invalid value: 599: may not specify a duration less than 10 minutes'],
    ['spec.tokenRequests[3].expirationSeconds', 'Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds'],
  ]);
  t.same(await invalid(t, DRV, driver('period.example.com', { nodeAllocatableUpdatePeriodSeconds: 9 })),
    [['spec.nodeAllocatableUpdatePeriodSeconds', 'Invalid value: 9: must be greater than or equal to 10 seconds']]);
  const badName = await invalid(t, DRV, driver('Bad_Name'));
  t.same(badName.map(([f]) => f), ['metadata.name']);
  // The bounds themselves are allowed: 10 minutes and exactly 2^32 seconds.
  const ok = await c.request('POST', DRV, { body: driver('bounds.example.com', { tokenRequests: [{ audience: '', expirationSeconds: 600 }, { audience: 'b', expirationSeconds: 2 ** 32 }] }) });
  t.equal(ok.status, 201, JSON.stringify(ok.json?.message));
});

t.test('CSIDriver: attachRequired and volumeLifecycleModes immutable, the rest mutable with a generation bump', async (t) => {
  const path = `${DRV}/update.example.com`;
  t.equal((await c.request('POST', DRV, { body: driver('update.example.com') })).status, 201);
  let r = await update(path, (o) => { o.spec.attachRequired = false; });
  t.equal(r.status, 422);
  t.same(causes(r), [['spec.attachedRequired', 'Invalid value: false: field is immutable']]);
  r = await update(path, (o) => { o.spec.volumeLifecycleModes = ['Ephemeral']; });
  t.same(causes(r), [['spec.volumeLifecycleModes', 'Invalid value: ["Ephemeral"]: field is immutable']]);
  r = await update(path, (o) => { Object.assign(o.spec, { podInfoOnMount: true, fsGroupPolicy: 'None', storageCapacity: true, requiresRepublish: true }); });
  t.equal(r.status, 200, JSON.stringify(r.json?.message));
  t.match(r.json, { metadata: { generation: 2 }, spec: { podInfoOnMount: true, fsGroupPolicy: 'None', storageCapacity: true } });
  r = await update(path, (o) => { o.metadata.labels = { a: 'b' }; });
  t.equal(r.json.metadata.generation, 2, 'a metadata change keeps generation');
});

t.test('CSIDriver: table columns and cells', async (t) => {
  await c.request('POST', DRV, { body: driver('table.example.com', { podInfoOnMount: true, storageCapacity: true, requiresRepublish: true, tokenRequests: [{ audience: 'a' }, { audience: 'b' }], volumeLifecycleModes: ['Persistent', 'Ephemeral'] }) });
  const tb = await table(DRV);
  t.same(tb.columns, [['Name', 'string'], ['AttachRequired', 'boolean'], ['PodInfoOnMount', 'boolean'], ['StorageCapacity', 'boolean'],
    ['TokenRequests', 'string'], ['RequiresRepublish', 'boolean'], ['Modes', 'string'], ['Age', 'string']]);
  t.same(tb.cells('table.example.com').slice(0, 7), ['table.example.com', true, true, true, 'a,b', true, 'Persistent,Ephemeral']);
  t.same(tb.cells('hostpath.csi.k8s.io').slice(0, 7), ['hostpath.csi.k8s.io', true, false, false, '<unset>', false, 'Persistent']);
});

t.test('CSINode: validation paths and messages', async (t) => {
  const ok = await c.request('POST', NODES, { body: csiNode('node-a', [nodeDriver('hostpath.csi.k8s.io', { allocatable: { count: 0 } })]) });
  t.equal(ok.status, 201, JSON.stringify(ok.json?.message));
  t.equal((await c.request('POST', NODES, { body: csiNode('node-empty', []) })).status, 201, 'an empty driver list is allowed');
  t.same(await invalid(t, NODES, csiNode('n1', [nodeDriver('Ebs.CSI.aws.com', { nodeID: '' })])),
    [['spec.drivers[0].nodeID', 'Required value']], 'driver names are checked lowercased');
  t.same(await invalid(t, NODES, csiNode('n2', [nodeDriver('a'.repeat(64))])),
    [['spec.drivers[0].name', 'Too long: may not be more than 63 bytes']]);
  t.same((await invalid(t, NODES, csiNode('n3', [nodeDriver('bad_driver')]))).map(([f]) => f), ['spec.drivers[0].name']);
  t.same(await invalid(t, NODES, csiNode('n4', [nodeDriver('x.example.com', { nodeID: 'n'.repeat(257) })])),
    [['spec.drivers[0].nodeID', `Invalid value: "${'n'.repeat(257)}": must be 256 characters or less`]]);
  t.equal((await c.request('POST', NODES, { body: csiNode('n5', [nodeDriver('x.example.com', { nodeID: 'n'.repeat(256) })]) })).status, 201, '256 characters pass');
  t.same(await invalid(t, NODES, csiNode('n6', [nodeDriver('x.example.com', { allocatable: { count: -1 } })])),
    [['spec.drivers[0].allocatable.count', 'Invalid value: -1: must be greater than or equal to 0']]);
  t.same(await invalid(t, NODES, csiNode('n7', [nodeDriver('x.example.com'), nodeDriver('x.example.com')])),
    [['spec.drivers[1].name', 'Duplicate value: "x.example.com"']]);
  const keys = await invalid(t, NODES, csiNode('n8', [nodeDriver('x.example.com', { topologyKeys: ['zone', 'zone', 'bad key'] })]));
  t.same(keys.slice(0, 2), [['spec.drivers[0]', 'Duplicate value: "zone"'], ['spec.drivers[0]', keys[1]![1]]]);
  t.match(keys[1]![1], /^Invalid value: "bad key": name part must consist of alphanumeric characters/);
});

t.test('CSINode: a listed driver may not change; drivers may come and go', async (t) => {
  const path = `${NODES}/node-u`;
  t.equal((await c.request('POST', NODES, { body: csiNode('node-u', [nodeDriver('a.example.com')]) })).status, 201);
  let r = await update(path, (o) => { o.spec.drivers[0].nodeID = 'other'; });
  t.equal(r.status, 422);
  t.same(causes(r).map(([f]) => f), ['spec.drivers']);
  t.match(causes(r)[0]![1], /"nodeID":"other".*: field is immutable$/);
  r = await update(path, (o) => { o.spec.drivers[0].topologyKeys = ['topology.kubernetes.io/region']; });
  t.same(causes(r).map(([f]) => f), ['spec.drivers']);
  r = await update(path, (o) => { o.spec.drivers.push(nodeDriver('b.example.com')); });
  t.equal(r.status, 200, 'a driver added');
  r = await update(path, (o) => { o.spec.drivers = o.spec.drivers.filter((d: Any) => d.name !== 'a.example.com'); });
  t.equal(r.status, 200, 'a driver removed');
  const tb = await table(NODES);
  t.same(tb.columns, [['Name', 'string'], ['Drivers', 'integer'], ['Age', 'string']]);
  t.same(tb.cells('node-u').slice(0, 2), ['node-u', 1]);
  t.same(tb.cells('node-empty').slice(0, 2), ['node-empty', 0]);
});

t.test('CSIStorageCapacity: validation, immutability and table', async (t) => {
  const ok = await c.request('POST', CAPS, { body: capacity('cap-a', { maximumVolumeSize: '1Gi' }) });
  t.equal(ok.status, 201, JSON.stringify(ok.json?.message));
  t.equal((await c.request('POST', CAPS, { body: capacity('cap-unset', { capacity: undefined }) })).status, 201);
  const cls = await invalid(t, CAPS, capacity('c1', { storageClassName: 'Fast_Class' }));
  t.same(cls.map(([f]) => f), ['storageClassName']);
  t.same((await invalid(t, CAPS, capacity('c2', { storageClassName: '' }))).map(([f]) => f), ['storageClassName'], 'an empty class is not a subdomain');
  t.same(await invalid(t, CAPS, capacity('c3', { capacity: '-1Gi' })), [['capacity', 'Invalid value: "-1Gi": must be greater than or equal to 0']]);
  t.same((await invalid(t, CAPS, capacity('c4', { maximumVolumeSize: 'lots' }))).map(([f]) => f), ['maximumVolumeSize']);
  t.same(await invalid(t, CAPS, capacity('c5', { nodeTopology: { matchExpressions: [{ key: 'zone', operator: 'Near', values: ['a'] }] } })),
    [['nodeTopology.matchExpressions[0].operator', 'Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist"']]);

  const path = `${CAPS}/cap-a`;
  let r = await update(path, (o) => { o.storageClassName = 'slow'; });
  t.same(causes(r), [['storageClassName', 'Invalid value: "slow": field is immutable']]);
  r = await update(path, (o) => { o.nodeTopology = { matchLabels: { 'topology.kubernetes.io/zone': 'b' } }; });
  t.same(causes(r).map(([f]) => f), ['nodeTopology']);
  r = await update(path, (o) => { o.capacity = '20Gi'; o.maximumVolumeSize = '2Gi'; });
  t.equal(r.status, 200, 'capacity and maximumVolumeSize may change');

  const tb = await table(`${GV}/csistoragecapacities`);
  t.same(tb.columns, [['Name', 'string'], ['StorageClassName', 'string'], ['Capacity', 'string']]);
  t.same(tb.cells('cap-a'), ['cap-a', 'fast', '20Gi']);
  t.same(tb.cells('cap-unset'), ['cap-unset', 'fast', '<unset>']);
});

t.test('discovery lists the three kinds with their scope', async (t) => {
  const resources = (await c.request('GET', GV)).json.resources as Any[];
  const find = (name: string): Any => resources.find((r) => r.name === name);
  t.match(find('csidrivers'), { kind: 'CSIDriver', namespaced: false, singularName: 'csidriver' });
  t.match(find('csinodes'), { kind: 'CSINode', namespaced: false, singularName: 'csinode' });
  t.match(find('csistoragecapacities'), { kind: 'CSIStorageCapacity', namespaced: true, singularName: 'csistoragecapacity' });
  for (const name of ['csidrivers', 'csinodes', 'csistoragecapacities']) t.equal(find(name).shortNames, undefined, `${name}: no short names`);
  t.ok(find('storageclasses') && find('volumeattachments'), 'beside the group\'s other kinds');
});

t.test('the Kubernetes HEAD fixtures: refused as they are, a round trip once made valid', { skip: FIXTURES ? false : 'no k8s-testdata/HEAD' }, async (t) => {
  const load = async (kind: string): Promise<Any> => {
    const f: Any = JSON.parse(await readFile(`${FIXTURES!}/storage.k8s.io.v1.${kind}.json`, 'utf8'));
    // The server owns the other metadata fields.
    const { labels, annotations } = f.metadata;
    f.metadata = { name: `fixture-${kind.toLowerCase()}`, labels, annotations };
    return f;
  };
  const roundTrip = async (path: string, f: Any, fields: (o: Any) => unknown): Promise<void> => {
    const made = await c.request('POST', path, { body: f });
    t.equal(made.status, 201, `${f.kind}: ${JSON.stringify(made.json?.message)}`);
    const got = (await c.request('GET', `${path}/${f.metadata.name}`)).json;
    t.same(fields(got), fields(f), `${f.kind}: comes back as sent`);
    const pb = await c.request('GET', `${path}/${f.metadata.name}`, { accept: 'application/vnd.kubernetes.protobuf' });
    t.equal(pb.status, 200, `${f.kind}: served as protobuf`);
    const put = await c.request('PUT', `${path}/${f.metadata.name}`, { raw: pb.body, contentType: 'application/vnd.kubernetes.protobuf' });
    t.equal(put.status, 200, `${f.kind}: the protobuf form written back: ${JSON.stringify(put.json?.message)}`);
    t.same(fields(put.json), fields(f), `${f.kind}: unchanged through protobuf`);
  };

  const d = await load('CSIDriver');
  const raw = await c.request('POST', DRV, { body: d });
  t.same(causes(raw).map(([f]) => f).sort(), ['spec.fsGroupPolicy', 'spec.nodeAllocatableUpdatePeriodSeconds', 'spec.tokenRequests[0].expirationSeconds', 'spec.volumeLifecycleModes']);
  Object.assign(d.spec, { volumeLifecycleModes: ['Persistent'], fsGroupPolicy: 'File', nodeAllocatableUpdatePeriodSeconds: 60 });
  d.spec.tokenRequests[0].expirationSeconds = 3600;
  await roundTrip(DRV, d, (o) => o.spec);

  // CSINode's placeholders pass (driver names are checked lowercased); only the name is replaced.
  await roundTrip(NODES, await load('CSINode'), (o) => [o.spec, o.status]);

  const cap = await load('CSIStorageCapacity');
  const refused = await c.request('POST', CAPS, { body: cap });
  t.same(causes(refused).map(([f]) => f).sort(), ['nodeTopology.matchExpressions[0].operator', 'storageClassName']);
  cap.storageClassName = 'storage-class-name-value';
  cap.nodeTopology.matchExpressions[0].operator = 'In';
  await roundTrip(CAPS, cap, (o) => [o.storageClassName, o.nodeTopology, o.capacity, o.maximumVolumeSize]);
});
