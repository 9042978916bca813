// The stored form of a built-in kind's object (go-json.ts goStorageForm, through ResourceStore):
// the text is Go's JSON without resourceVersion, the written object is what decoding the text
// gives with its resourceVersion in Go's place (after uid), an object the caller keeps shares
// nothing with the written one, a value a JSON round trip would change falls back to the parse,
// and the resourceVersion offset the store hands the answer (rvAt) gives the same body as
// scanning the stored bytes (json-splice.ts), for tricky names too.
import t from 'tap';
import { ResourceStore } from '../../src/storage/resource-store.js';
import { jsonCodec } from '../../src/storage/codec.js';
import type { Backend } from '../../src/storage/interface.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { goJsonText } from '../../src/api/codec/go-json.js';
import { scanStored, spliceServed } from '../../src/daemons/apiserver/rest/json-splice.js';
import { servedJsonAt } from '../../src/daemons/apiserver/rest/served-json.js';

const rs = new ResourceStore('', 'configmaps', undefined as unknown as Backend, undefined as unknown as Backend, undefined, '/registry/configmaps/', jsonCodec, undefined);
const prefixOf = (kind: string, apiVersion: string): Buffer => Buffer.from(`"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)}`);

function configMap(meta: Record<string, unknown>, data: Record<string, string> = { b: '2', a: '1' }): KubeObject {
  // The client's order: apiVersion first, data keys unsorted.
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'ns', ...meta }, data } as unknown as KubeObject;
}

const cases: Array<[string, KubeObject, boolean]> = [
  // [what, object, whether the offset is known]
  ['name, uid and later members', configMap({ name: 'c', uid: 'u-1', creationTimestamp: '2026-12-08T00:00:00Z', labels: { z: '1', a: '2' } }), true],
  ['generateName only before the slot', configMap({ generateName: 'g-', uid: 'u-2', creationTimestamp: '2026-12-08T00:00:00Z' }), true],
  ['a name holding the next member\'s key', configMap({ name: 'x,"creationTimestamp":"y', uid: 'u-3', creationTimestamp: '2026-12-08T00:00:00Z' }), true],
  ['quotes and backslashes before the slot', configMap({ name: 'a\\",\\"b', selfLink: '"\\', uid: '"', annotations: { k: ',"annotations":' } }), true],
  ['an unknown metadata member after the slot', configMap({ name: 'c', uid: 'u-4', zzz: 1 }), true],
  ['a resourceVersion given (an update)', configMap({ name: 'c', resourceVersion: '41', uid: 'u-5', generation: 2 }), true],
  // Go writes a missing creationTimestamp as null, after the slot: metadata never ends with it.
  ['no creationTimestamp (filled as null)', configMap({ name: 'c', uid: 'u-6' }), true],
  ['nothing before the slot', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { creationTimestamp: '2026-12-08T00:00:00Z' } } as unknown as KubeObject, false],
  ['not ASCII', configMap({ name: 'c', uid: 'u-7', creationTimestamp: '2026-12-08T00:00:00Z' }, { s: 'ünï ✓' }), false],
];

for (const [what, obj, known] of cases) {
  t.test(what, async (t) => {
    for (const adopt of [false, true]) {
      const before = JSON.stringify(obj);
      const copy = JSON.parse(before) as KubeObject;
      const enc = rs.encode(copy, 'k', adopt) as Awaited<ReturnType<typeof rs.encode>>;
      const expectText = goJsonText({ ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } });
      t.equal(enc.text, expectText, `${adopt ? 'adopted' : 'kept'}: the text is Go's form without resourceVersion`);
      const written = rs.decodeWritten(enc, 57);
      t.equal(JSON.stringify(written), goJsonText({ ...(JSON.parse(enc.text!) as KubeObject), metadata: { ...JSON.parse(enc.text!).metadata, resourceVersion: '57' } }),
        'the written object is the decoded text with resourceVersion after uid, in Go order');
      t.notOk(Object.values(written.metadata ?? {}).includes(undefined), 'no member left undefined');
      if (!adopt) {
        t.equal(JSON.stringify(copy), before, 'the kept object is unchanged');
        (written.metadata as Record<string, unknown>)['name'] = 'changed';
        if (written.data) (written.data as Record<string, string>)['a'] = 'changed';
        t.equal(JSON.stringify(copy), before, 'and shares nothing with the written one');
      }
      t.equal(enc.rvAt !== undefined, known, known ? 'the offset is known' : 'no offset: the answer scans');
      if (enc.rvAt !== undefined) {
        const prefix = prefixOf('ConfigMap', 'v1');
        const scanned = scanStored(enc.plain)!;
        t.same(servedJsonAt(prefix, enc.plain, enc.rvAt, 57), spliceServed(scanned, 57, prefix), 'the body at the offset is the scanned splice, byte for byte');
        t.equal(servedJsonAt(prefixOf('ConfigMap', 'v2'), enc.plain, enc.rvAt, 57), undefined, 'another served version: no shortcut');
      }
    }
  });
}

t.test('values a JSON round trip changes fall back to the parse', async (t) => {
  for (const [what, bad] of [['NaN', Number.NaN], ['-0', -0], ['a Date', new Date(0)], ['undefined in a list', [undefined]]] as const) {
    const obj = configMap({ name: 'c', uid: 'u', creationTimestamp: '2026-12-08T00:00:00Z' });
    (obj as unknown as Record<string, unknown>)['binaryData'] = { x: bad };
    const enc = rs.encode(obj, 'k', true) as Awaited<ReturnType<typeof rs.encode>>;
    t.equal(enc.written, undefined, `${what}: no written copy, decoding parses the text`);
    const w = rs.decodeWritten(enc, 3);
    t.same(w, { ...JSON.parse(enc.text!), metadata: { ...JSON.parse(enc.text!).metadata, resourceVersion: '3' } }, `${what}: the decoded text`);
  }
});
