import t from 'tap';
import { encodeProtobuf } from '../../src/api/codec/protobuf.js';
import type { KeyValue } from '../../src/storage/interface.js';
import { bufferSource, type BodySource } from '../../src/daemons/apiserver/body-writer.js';
import { scanStored, splicePlan, type SplicePlan } from '../../src/daemons/apiserver/rest/json-splice.js';
import { jsonListSource, partsSource, protobufListSource } from '../../src/daemons/apiserver/rest/list-body.js';
import { encodeListFromItems, encodeListItem, protobufListPlan } from '../../src/daemons/apiserver/rest/protobuf-entries.js';

// List bodies made piece by piece must be byte for byte the list written at once, whatever the
// piece size: pieces hold whole items, an item larger than a piece is a piece of its own, and
// the length announced up front (Content-Length) is the length written.

function drain(src: BodySource): { bytes: Buffer; pieces: Buffer[] } {
  const pieces: Buffer[] = [];
  for (let p = src.next(); p !== undefined; p = src.next()) pieces.push(Buffer.from(p));
  return { bytes: Buffer.concat(pieces), pieces };
}

type Obj = Record<string, unknown>;

/** A list item as served: resourceVersion set, without kind and apiVersion. */
function served(o: Obj, rv: number | string): Obj {
  const withRv: Obj = { ...o, metadata: { ...(o['metadata'] as Obj), resourceVersion: String(rv) } };
  const { kind: _k, apiVersion: _a, ...rest } = withRv;
  void _k; void _a;
  return rest;
}

function configMap(i: number, size: number): Obj {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'ns', uid: `u-${i}` }, data: { blob: 'ü'.repeat(size) } };
}

const SIZES = [0, 1, 50, 200, 3000, 70_000, 10, 64 * 1024];
const PIECES = [1, 7, 100, 4096, 64 * 1024, Number.MAX_SAFE_INTEGER];

t.test('JSON lists: spliced and remembered items, any piece size, equal JSON.stringify of the list', async (t) => {
  for (const count of [0, 1, SIZES.length]) {
    const objs = SIZES.slice(0, count).map((n, i) => configMap(i, n));
    const entries: KeyValue[] = objs.map((o, i) => ({ key: `k${i}`, value: Buffer.from(JSON.stringify(o)), createRevision: 1, modRevision: 100 + i * 997, version: 1 }));
    // Every other item as remembered bytes, the rest as splice plans.
    const items: (Buffer | SplicePlan)[] = entries.map((kv, i) =>
      i % 2 ? Buffer.from(JSON.stringify(served(objs[i]!, kv.modRevision))) : splicePlan(scanStored(kv.value)!));
    const metadata = { resourceVersion: '12345', continue: 'abc' };
    const want = JSON.stringify({
      kind: 'ConfigMapList', apiVersion: 'v1', metadata,
      items: objs.map((o, i) => served(o, entries[i]!.modRevision)),
    }) + '\n'; // Kubernetes' encoder ends the body with a newline
    for (const piece of PIECES) {
      const src = jsonListSource('ConfigMapList', 'v1', metadata, entries, items, piece);
      const { bytes, pieces } = drain(src);
      t.equal(src.length, Buffer.byteLength(want), `announced length (${count} items, pieces of ${piece})`);
      t.equal(bytes.toString('utf8'), want, `bytes (${count} items, pieces of ${piece})`);
      if (piece >= Buffer.byteLength(want)) t.equal(pieces.length, 1, 'a body within one piece is one piece');
      else t.ok(pieces.every((p) => p.length > 0), 'no empty piece');
    }
  }
});

t.test('protobuf lists: equal the list encoded at once, any piece size', async (t) => {
  const plan = protobufListPlan('v1', 'ConfigMapList');
  if (!plan) throw new Error('no protobuf plan for v1 ConfigMapList');
  const objs = SIZES.map((n, i) => configMap(i, n));
  const items = objs.map((o) => encodeListItem(plan, served(o, 7)));
  const metadata = { resourceVersion: '99' };
  const whole = encodeListFromItems(plan, 'v1', 'ConfigMapList', metadata, items);
  t.same(whole, encodeProtobuf({ apiVersion: 'v1', kind: 'ConfigMapList', metadata, items: objs.map((o) => served(o, 7)) } as never), 'the oracle is the whole list encoded');
  for (const piece of PIECES) {
    const src = protobufListSource(plan, 'v1', 'ConfigMapList', metadata, items, piece);
    const { bytes } = drain(src);
    t.equal(src.length, whole.length, `announced length (pieces of ${piece})`);
    t.ok(bytes.equals(whole), `bytes (pieces of ${piece})`);
  }
  const empty = protobufListSource(plan, 'v1', 'ConfigMapList', metadata, [], 3);
  t.ok(drain(empty).bytes.equals(encodeListFromItems(plan, 'v1', 'ConfigMapList', metadata, [])), 'an empty list');
});

t.test('parts and buffers: a head larger than a piece, empty bodies', async (t) => {
  const head = Buffer.from('h'.repeat(10));
  const src = partsSource(head, [3, 3], (i, out, at) => at + out.write(i ? 'bbb' : 'aaa', at), Buffer.from('!'), 4);
  t.same(drain(src).pieces.map(String), ['hhhhhhhhhh', 'aaa', 'bbb!']);
  t.same(drain(bufferSource(Buffer.alloc(0))).pieces.map(String), [''], 'an empty buffer is one empty piece');
  t.same(drain(bufferSource(Buffer.from('abcdefg'), 3)).pieces.map(String), ['abc', 'def', 'g']);
});
