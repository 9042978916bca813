// jsonRoundTripCopy: equal to JSON.parse(JSON.stringify(v)) whenever it answers, a copy that
// shares no object or array with its input, and no answer for values a round trip changes.
// isJsonRoundTripExact: true exactly when jsonRoundTripCopy answers.
import t from 'tap';
import { isJsonRoundTripExact, jsonRoundTripCopy } from '../../src/util/json-clone.js';

const roundTrip = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

t.test('pure JSON values copy to what a round trip gives', async (t) => {
  const pod = {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', labels: { app: 'web', '10': 'ten', '2': 'two' }, ownerReferences: [{ uid: 'u', controller: true }] },
    spec: { containers: [{ name: 'c', ports: [{ containerPort: 80 }], args: [] }], priority: 0, ratio: 1.5e-7, big: 1e21 },
    status: { phase: 'Running', message: 'lone \ud800 surrogate and "quotes"', empty: {}, nothing: null },
  };
  const copy = jsonRoundTripCopy(pod);
  t.same(copy, roundTrip(pod));
  t.equal(JSON.stringify(copy), JSON.stringify(pod), 'same text, key order included');
  t.not(copy, pod);
  t.not(copy!.metadata, pod.metadata, 'objects are copied');
  t.not(copy!.metadata.ownerReferences, pod.metadata.ownerReferences, 'arrays are copied');
  t.not(copy!.metadata.ownerReferences[0], pod.metadata.ownerReferences[0]);
  copy!.metadata.labels.app = 'changed';
  t.equal(pod.metadata.labels.app, 'web', 'changing the copy leaves the input alone');
  for (const v of ['s', 3, true, null, [], {}, [[1, [2]], { a: [] }]]) t.same(jsonRoundTripCopy(v), roundTrip(v));
  for (const v of [pod, 's', 3, true, null, [], {}, [[1, [2]], { a: [] }]]) t.ok(isJsonRoundTripExact(v), `exact: ${JSON.stringify(v).slice(0, 40)}`);
});

t.test('a "__proto__" key stays an own property, as JSON.parse makes it', async (t) => {
  const v = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as Record<string, unknown>;
  const copy = jsonRoundTripCopy(v) as Record<string, unknown>;
  t.ok(Object.prototype.hasOwnProperty.call(copy, '__proto__'));
  t.equal(Object.getPrototypeOf(copy), Object.prototype);
  t.equal(JSON.stringify(copy), JSON.stringify(v));
});

t.test('values a round trip would change get no answer', async (t) => {
  class Thing { a = 1; }
  const impure: unknown[] = [
    { a: undefined }, [undefined], { f: () => 1 }, { s: Symbol('s') }, { n: NaN }, { n: Infinity }, { n: -0 },
    { d: new Date(0) }, { t: new Thing() }, { j: { toJSON: () => 'x' } }, { b: Buffer.from('x') },
    // eslint-disable-next-line no-sparse-arrays
    [1, , 3], { nested: { deeper: [{ u: undefined }] } }, undefined, 10n,
  ];
  for (const v of impure) {
    const what = String(JSON.stringify(v, (_k, x: unknown) => typeof x === 'bigint' ? 'bigint' : x) ?? typeof v);
    t.equal(jsonRoundTripCopy(v), undefined, `no answer for ${what}`);
    t.notOk(isJsonRoundTripExact(v), `not exact: ${what}`);
  }
  // A null-prototype object is plain to JSON: it copies (to an ordinary object, as parse gives).
  const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
  t.same(jsonRoundTripCopy(bare), { a: 1 });
  t.ok(isJsonRoundTripExact(bare));
});
