import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import { applyPatch, patchTypeOf } from '../../src/api/patch/patch-types.js';
import type { MessageDecl, SchemaRegistry } from '../../src/api/schema/types.js';

const decl: MessageDecl = { name: 't.X', fields: [{ name: 'items', number: 1, type: { scalar: 'string' }, repeated: true, patchStrategy: 'merge' }] };
const reg: SchemaRegistry = { message: (n) => (n === 't.X' ? decl : undefined), forKind: () => undefined, all: () => [decl] };

t.test('content types', async (t) => {
  t.equal(patchTypeOf('application/json-patch+json', true), 'json');
  t.equal(patchTypeOf('application/merge-patch+json; charset=utf-8', true), 'merge');
  t.equal(patchTypeOf('application/strategic-merge-patch+json', true), 'strategic');
  t.equal(patchTypeOf('application/apply-patch+yaml', false), 'apply');
  for (const [ct, strategic] of [['application/json', true], ['application/strategic-merge-patch+json', false], [undefined, true]] as const) {
    try {
      patchTypeOf(ct, strategic);
      t.fail('expected 415');
    } catch (e) {
      t.ok(isApiError(e, 'UnsupportedMediaType'));
      if (isApiError(e)) {
        t.equal(e.code, 415);
        t.match(e.message, /accepted media types include: application\/json-patch\+json, application\/merge-patch\+json/);
        if (!strategic) t.notMatch(e.message, /strategic/);
      }
    }
  }
});

t.test('dispatch', async (t) => {
  const orig = { items: ['a'] };
  t.same(applyPatch('json', orig, [{ op: 'add', path: '/items/-', value: 'b' }], decl, reg), { items: ['a', 'b'] });
  t.same(applyPatch('merge', orig, { items: ['b'] }, decl, reg), { items: ['b'] });
  t.same(applyPatch('strategic', orig, { items: ['b'] }, decl, reg), { items: ['b', 'a'] });
  try {
    applyPatch('strategic', orig, { items: ['b'] }, undefined, reg);
    t.fail('expected 415');
  } catch (e) {
    t.ok(isApiError(e, 'UnsupportedMediaType'), 'no strategic merge for schemaless objects');
  }
});
