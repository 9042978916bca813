import t from 'tap';
import {
  capUpdateManagers, decodeManagedFields, encodeManagedFields, formatTime, managerId, printManager, updateManagedFields,
  type ManagedFieldsEntry, type ManagerState,
} from '../../src/api/patch/managed-fields.js';
import { FieldSet } from '../../src/api/patch/fieldpath.js';
import type { KubeObject } from '../../src/api/resources/types.js';

const T0 = '2026-01-01T00:00:00Z', T1 = '2026-01-01T00:01:00Z';
const entries = (o: KubeObject): ManagedFieldsEntry[] => (o.metadata?.managedFields ?? []) as ManagedFieldsEntry[];

t.test('create and update are tracked as Update operations (untyped objects)', async (t) => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'd', uid: 'u', resourceVersion: '1', labels: { a: '1' } }, data: { k: 'v' } };
  const created = updateManagedFields(undefined, cm, 'kubectl-create', 'Update', 'v1', new Date(T0));
  t.same(entries(created), [{
    manager: 'kubectl-create', operation: 'Update', apiVersion: 'v1', time: T0, fieldsType: 'FieldsV1',
    fieldsV1: { 'f:data': { '.': {}, 'f:k': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } } },
  }]);
  t.equal(cm.metadata.labels.a, '1');
  t.notOk('managedFields' in cm.metadata, 'input untouched');

  const next = JSON.parse(JSON.stringify(created));
  next.metadata.labels.b = '2';
  next.data.k = 'v2';
  const updated = updateManagedFields(created, next, 'kubectl-label', 'Update', 'v1', T1);
  const byManager = Object.fromEntries(entries(updated).map((e) => [e.manager, e]));
  t.same(byManager['kubectl-label']!.fieldsV1, { 'f:data': { 'f:k': {} }, 'f:metadata': { 'f:labels': { 'f:b': {} } } });
  t.same(byManager['kubectl-create']!.fieldsV1, { 'f:data': {}, 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } } });
  t.same(entries(updated).map((e) => e.manager), ['kubectl-create', 'kubectl-label'], 'sorted by time');

  const noop = updateManagedFields(updated, JSON.parse(JSON.stringify(updated)), 'someone', 'Update', 'v1', '2026-01-01T00:05:00Z');
  t.same(entries(noop), entries(updated), 'a write that changes nothing owns nothing');

  const removed = JSON.parse(JSON.stringify(updated));
  delete removed.metadata.labels.b;
  const afterRemove = updateManagedFields(updated, removed, 'x', 'Update', 'v1', T1);
  t.same(entries(afterRemove).find((e) => e.manager === 'kubectl-label')!.fieldsV1, { 'f:data': { 'f:k': {} } }, 'removed fields leave their owner');
});

t.test('managedFields sent by the client', async (t) => {
  const base = updateManagedFields(undefined, { metadata: { name: 'x', labels: { a: '1' } } }, 'm1', 'Update', 'v1', T0);
  const reset = { ...base, metadata: { ...base.metadata, labels: { a: '1', b: '2' }, managedFields: [{}] } };
  const r = updateManagedFields(base, reset, 'm2', 'Update', 'v1', T1);
  t.same(entries(r).map((e) => e.manager), ['m2'], '[{}] clears the stored entries');
  t.same(entries(r)[0]!.fieldsV1, { 'f:metadata': { 'f:labels': { 'f:b': {} } } });
  const echoed = { ...base, metadata: { ...base.metadata, labels: { a: '1', c: '3' } } };
  const e = updateManagedFields(base, echoed, 'm3', 'Update', 'v1', T1);
  t.same(entries(e).map((x) => x.manager), ['m1', 'm3'], 'echoed managedFields are kept');
  const empty = { ...base, metadata: { ...base.metadata, managedFields: [] } };
  t.same(entries(updateManagedFields(base, empty, 'm4', 'Update', 'v1', T1)).map((x) => x.manager), ['m1'], 'an empty list does not clear');
  const garbage = { ...base, metadata: { ...base.metadata, managedFields: [{ operation: 'Explode' }] } };
  t.same(entries(updateManagedFields(base, garbage, 'm5', 'Update', 'v1', T1)).map((x) => x.manager), ['m1'], 'undecodable: the stored ones stay');
  const replaced = { ...base, metadata: { ...base.metadata, managedFields: [{ manager: 'z', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:a': {} } } } }] } };
  t.same(entries(updateManagedFields(base, replaced, 'm6', 'Update', 'v1', T1)).map((x) => x.manager), ['z'], 'valid ones replace the stored ones');
});

t.test('decode, encode, identities', async (t) => {
  const raw = [
    { manager: 'b', operation: 'Update', apiVersion: 'v1', time: T1, fieldsType: 'FieldsV1', fieldsV1: { 'f:a': {} } },
    { manager: 'a', operation: 'Update', apiVersion: 'v1', time: T1, fieldsType: 'FieldsV1', fieldsV1: { 'f:b': {} }, subresource: 'status' },
    { manager: 'z', operation: 'Apply', apiVersion: 'v1', time: T1, fieldsType: 'FieldsV1', fieldsV1: { 'f:c': {} } },
    { manager: 'e', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {} },
  ];
  const states = decodeManagedFields(raw);
  t.equal(states.length, 4);
  t.same(encodeManagedFields(states).map((e) => e.manager), ['z', 'a', 'b'], 'Apply first, then by time and name; empty sets dropped');
  t.throws(() => decodeManagedFields({}), /must be a list/);
  t.throws(() => decodeManagedFields([{ operation: 'Nope' }]), /operation must be Apply or Update/);
  t.throws(() => decodeManagedFields([{ fieldsType: 'FieldsV2' }]), /fieldsType must be FieldsV1/);
  t.throws(() => decodeManagedFields([{ fieldsV1: { bad: {} } }]), /fieldsV1: invalid path element/);
  t.equal(managerId({ manager: 'k', operation: 'Apply', apiVersion: 'apps/v1' }), '{"manager":"k","operation":"Apply"}');
  t.equal(managerId({ manager: 'k', operation: 'Update', apiVersion: 'apps/v1', subresource: 'status' }), '{"manager":"k","operation":"Update","apiVersion":"apps/v1","subresource":"status"}');
  t.equal(printManager({ manager: 'k', operation: 'Update', apiVersion: 'apps/v1' }), '"k" using apps/v1');
  t.equal(printManager({ manager: 'k', operation: 'Apply', apiVersion: 'apps/v1' }), '"k"');
  t.equal(formatTime(new Date('2026-03-04T05:06:07.891Z')), '2026-03-04T05:06:07Z');
});

t.test('Update entries are capped at 10', async (t) => {
  const states: ManagerState[] = Array.from({ length: 12 }, (_, i) => ({
    manager: `m${i}`, operation: 'Update' as const, apiVersion: 'v1', time: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(), set: new FieldSet([[`f:x${i}`]]),
  }));
  states.push({ manager: 'applier', operation: 'Apply', apiVersion: 'v1', set: new FieldSet([['f:y']]) });
  const capped = capUpdateManagers(states);
  const updates = capped.filter((s) => s.operation === 'Update');
  t.equal(updates.length, 10);
  const bucket = capped.find((s) => s.manager === 'ancient-changes')!;
  t.same(bucket.set.paths(), [['f:x0'], ['f:x1'], ['f:x2']]);
  t.ok(capped.some((s) => s.manager === 'applier'), 'Apply entries are never capped');
});
