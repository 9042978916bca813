import t from 'tap';
import { jsonEqual } from '../../src/storage/resource-store.js';

// jsonEqual decides whether an update changed nothing (object-store.ts `unchanged`).

t.test('equal JSON values, whatever the key order', async (t) => {
  const pairs: [unknown, unknown][] = [
    [1, 1], ['a', 'a'], [null, null], [true, true], [[], []], [{}, {}],
    [{ a: 1, b: 2 }, { b: 2, a: 1 }],
    [{ a: { b: [1, { c: null }] } }, { a: { b: [1, { c: null }] } }],
    // An undefined member is an absent one, on either side.
    [{ a: 1, b: undefined }, { a: 1 }],
    [{ a: 1 }, { b: undefined, a: 1 }],
    [{ a: undefined }, {}],
  ];
  for (const [a, b] of pairs) t.ok(jsonEqual(a, b), `${JSON.stringify(a)} equals ${JSON.stringify(b)}`);
});

t.test('different JSON values', async (t) => {
  const pairs: [unknown, unknown][] = [
    [1, 2], [1, '1'], [null, {}], [{}, null], [[], {}], [{}, []], [[1], [1, 2]], [[1, 2], [2, 1]],
    [{ a: 1 }, { a: 2 }], [{ a: 1 }, { b: 1 }], [{ a: 1 }, {}], [{}, { a: 1 }],
    [{ a: 1, b: 2 }, { a: 1 }], [{ a: 1 }, { a: 1, b: 2 }],
    [{ a: 1, c: undefined }, { a: 1, b: 2 }],
    [{ a: { b: [1, { c: null }] } }, { a: { b: [1, { c: 0 }] } }],
    [{ a: null }, { a: undefined }],
  ];
  for (const [a, b] of pairs) {
    t.notOk(jsonEqual(a, b), `${JSON.stringify(a)} differs from ${JSON.stringify(b)}`);
    t.notOk(jsonEqual(b, a), `${JSON.stringify(b)} differs from ${JSON.stringify(a)}`);
  }
});

t.test('inherited members do not count', async (t) => {
  const proto = { inherited: 1 };
  const a = Object.assign(Object.create(proto) as Record<string, unknown>, { x: 1 });
  t.ok(jsonEqual(a, { x: 1 }));
  t.ok(jsonEqual({ x: 1 }, a));
});
