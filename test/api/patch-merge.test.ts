import t, { type Test } from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import { applyMergePatch, createMergePatch, mergePatch } from '../../src/api/patch/merge-patch.js';

t.test('RFC 7386 appendix A examples', async (t) => {
  const cases: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, want] of cases) t.same(mergePatch(target, patch), want, JSON.stringify([target, patch]));
});

t.test('kubectl scale / label bodies', async (t) => {
  const live = Object.freeze({ metadata: Object.freeze({ name: 'd', labels: Object.freeze({ a: '1', b: '2' }) }), spec: Object.freeze({ replicas: 1, template: Object.freeze({}) }) });
  t.same(applyMergePatch(live, { spec: { replicas: 3 } }), { metadata: { name: 'd', labels: { a: '1', b: '2' } }, spec: { replicas: 3, template: {} } });
  t.same(applyMergePatch(live, { metadata: { labels: { a: null, c: '3' } } }), { metadata: { name: 'd', labels: { b: '2', c: '3' } }, spec: { replicas: 1, template: {} } });
  t.equal(live.spec.replicas, 1, 'input untouched');
});

t.test('an API patch must be an object', async (t) => {
  try {
    applyMergePatch({}, [1]);
    t.fail('expected 400');
  } catch (e) {
    t.ok(isApiError(e, 'BadRequest'));
  }
});

t.test('createMergePatch round-trips', async (t) => {
  const a = { x: 1, y: { p: 1, q: [1, 2] }, z: 'gone' };
  const b = { x: 2, y: { p: 1, q: [1] }, w: { n: null } };
  const p = createMergePatch(a, b);
  t.same(p, { z: null, x: 2, y: { q: [1] }, w: { n: null } });
  t.same(mergePatch(a, { x: 2, y: { q: [1] }, z: null }), { x: 2, y: { p: 1, q: [1] } });
});
