// cloneJson: a deep copy equal to structuredClone's for JSON data and for anything else.
import t from 'tap';
import { cloneJson } from '../../src/util/json-clone.js';

t.test('copies JSON data deeply and shares nothing mutable', async (t) => {
  const src = { a: 1, b: 'x', c: null, d: [1, { e: [true, false] }], f: { g: { h: 'i' } }, u: undefined };
  const c = cloneJson(src);
  t.same(c, structuredClone(src));
  t.not(c.d, src.d);
  t.not(c.d[1], src.d[1]);
  t.not(c.f.g, src.f.g);
  t.ok(Object.prototype.hasOwnProperty.call(c, 'u'), 'undefined-valued keys stay, as structuredClone keeps them');
  (c.f.g as { h: string }).h = 'changed';
  t.equal(src.f.g.h, 'i');
  t.same(Object.keys(c), Object.keys(src), 'key order kept');
});

t.test('a "__proto__" key stays an own property', async (t) => {
  const src = JSON.parse('{"__proto__":{"polluted":true},"x":1}') as Record<string, unknown>;
  const c = cloneJson(src);
  t.ok(Object.prototype.hasOwnProperty.call(c, '__proto__'));
  t.equal(Object.getPrototypeOf(c), Object.prototype);
  t.equal((c as { polluted?: boolean }).polluted, undefined);
  t.same(JSON.stringify(c), JSON.stringify(src));
});

t.test('non-plain values are copied as structuredClone copies them', async (t) => {
  const d = new Date(0);
  const src = { d, m: new Map([['k', 1]]), arr: [new Date(1)] };
  const c = cloneJson(src);
  t.ok(c.d instanceof Date);
  t.not(c.d, d);
  t.equal(c.d.getTime(), 0);
  t.ok(c.m instanceof Map);
  t.equal(c.m.get('k'), 1);
  t.ok(c.arr[0] instanceof Date);
  t.equal(cloneJson(null), null);
  t.equal(cloneJson('s'), 's');
  t.same(cloneJson([]), []);
});
