import t, { type Test } from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import {
  checkFieldSelector, escapeFieldValue, exactName, exactNamespace, fieldSelectorMatcher, fieldSelectsEverything,
  parseFieldSelector, requiresExactField, unsupportedFieldError,
} from '../../src/api/meta/field-selector.js';

function throws400(t: Test, fn: () => unknown, message: string | RegExp): void {
  try {
    fn();
    t.fail('expected a 400');
  } catch (e) {
    t.ok(isApiError(e, 'BadRequest'));
    if (isApiError(e)) {
      t.equal(e.code, 400);
      if (typeof message === 'string') t.equal(e.message, message); else t.match(e.message, message);
    }
  }
}

const pod: Record<string, string> = { 'metadata.name': 'web-1', 'metadata.namespace': 'default', 'status.phase': 'Running', 'spec.nodeName': '' };
const get = (p: string): string | undefined => pod[p];

t.test('parse and match', async (t) => {
  const sel = parseFieldSelector('status.phase=Running,metadata.name==web-1,spec.nodeName!=node-a');
  t.equal(sel.requirements.length, 3);
  t.ok(fieldSelectorMatcher(sel, get));
  t.notOk(fieldSelectorMatcher(parseFieldSelector('status.phase!=Running'), get));
  t.ok(fieldSelectorMatcher(parseFieldSelector('spec.nodeName='), get), 'empty value matches the empty field');
  t.ok(fieldSelectorMatcher(parseFieldSelector('spec.missing='), get), 'a missing field counts as ""');
  const m = fieldSelectorMatcher(parseFieldSelector('metadata.namespace=kube-system'));
  t.notOk(m(get));
  t.ok(fieldSelectsEverything(parseFieldSelector('')));
  t.ok(fieldSelectorMatcher(parseFieldSelector(''), get));
  t.ok(fieldSelectsEverything(parseFieldSelector(',')), 'empty terms are skipped');
});

t.test('escapes in values', async (t) => {
  const sel = parseFieldSelector('metadata.name=a\\,b\\=c\\\\d');
  t.equal(sel.requirements[0]!.value, 'a,b=c\\d');
  t.equal(sel.toString(), 'metadata.name=a\\,b\\=c\\\\d');
  t.equal(escapeFieldValue('x,y=z'), 'x\\,y\\=z');
  throws400(t, () => parseFieldSelector('a=b\\x'), 'invalid field selector: invalid escape sequence: \\x');
  throws400(t, () => parseFieldSelector('a=b\\'), 'invalid field selector: invalid escape sequence: \\');
  throws400(t, () => parseFieldSelector('a=b=c'), 'invalid field selector: unescaped character in value: =');
});

t.test('malformed terms', async (t) => {
  throws400(t, () => parseFieldSelector('metadata.name'), "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
  throws400(t, () => parseFieldSelector('a=b,oops'), "invalid selector: 'a=b,oops'; can't understand 'oops'");
});

t.test('exact name and namespace for watch shortcuts', async (t) => {
  t.equal(exactName(parseFieldSelector('metadata.name=x')), 'x');
  t.equal(exactName(parseFieldSelector('metadata.name==x,metadata.namespace=ns')), 'x');
  t.equal(exactNamespace(parseFieldSelector('metadata.name==x,metadata.namespace=ns')), 'ns');
  t.equal(exactName(parseFieldSelector('metadata.name!=x')), undefined);
  t.equal(exactName(parseFieldSelector('status.phase=Running')), undefined);
  t.equal(requiresExactField(parseFieldSelector('spec.nodeName=n1'), 'spec.nodeName'), 'n1');
});

t.test('unsupported fields', async (t) => {
  const e = unsupportedFieldError('spec.foo');
  t.equal(e.code, 400);
  t.equal(e.reason, 'BadRequest');
  t.equal(e.message, 'field label not supported: spec.foo');
  const sel = parseFieldSelector('metadata.name=x,spec.foo=y');
  throws400(t, () => checkFieldSelector(sel, ['metadata.name', 'metadata.namespace']), 'field label not supported: spec.foo');
  throws400(t, () => checkFieldSelector(sel, new Set(['metadata.name'])), 'field label not supported: spec.foo');
  t.doesNotThrow(() => checkFieldSelector(sel, (f) => f.startsWith('metadata.') || f === 'spec.foo'));
});
