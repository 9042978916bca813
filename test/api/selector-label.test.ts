import t, { type Test } from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import {
  everything, labelKeyErrors, labelSelectorAsString, labelSelectorFromObject, labelSelectorMatcher, labelSelectorObjectMatcher,
  labelValueErrors, nothing, parseLabelSelector, requiresExactMatch, selectorFromSet, selectsEverything, selectsNothing,
} from '../../src/api/meta/label-selector.js';

function badRequest(t: Test, fn: () => unknown, message?: RegExp | string): void {
  try {
    fn();
    t.fail('expected a 400');
  } catch (e) {
    t.ok(isApiError(e, 'BadRequest'), 'BadRequest ApiError');
    if (isApiError(e)) {
      t.equal(e.code, 400);
      if (typeof message === 'string') t.equal(e.message, message);
      else if (message) t.match(e.message, message);
    }
  }
}

t.test('equality forms', async (t) => {
  const m = labelSelectorMatcher('app=web,tier==front,env!=prod');
  t.ok(m({ app: 'web', tier: 'front' }));
  t.ok(m({ app: 'web', tier: 'front', env: 'dev' }));
  t.notOk(m({ app: 'web', tier: 'front', env: 'prod' }));
  t.notOk(m({ app: 'web' }));
  t.notOk(m(undefined));
  t.notOk(labelSelectorMatcher('a=b')({}));
  t.ok(labelSelectorMatcher('a!=b')({}), '!= matches a missing key');
  t.ok(labelSelectorMatcher('a!=b')(null));
});

t.test('set-based forms, exists, does not exist', async (t) => {
  const m = labelSelectorMatcher('env in (prod, staging),tier notin (cache),team,!legacy');
  t.ok(m({ env: 'prod', team: 'x' }));
  t.ok(m({ env: 'staging', team: 'x', tier: 'web' }));
  t.notOk(m({ env: 'dev', team: 'x' }));
  t.notOk(m({ env: 'prod', team: 'x', tier: 'cache' }));
  t.notOk(m({ env: 'prod' }), 'team must exist');
  t.notOk(m({ env: 'prod', team: 'x', legacy: '' }), '!legacy');
  t.ok(labelSelectorMatcher('x notin (a)')({}), 'notin matches a missing key');
  t.ok(labelSelectorMatcher('x in ()')({ x: '' }), 'in () holds the empty value');
  t.ok(labelSelectorMatcher('x in (a,,b)')({ x: '' }));
  t.ok(labelSelectorMatcher('x=')({ x: '' }), 'empty value');
  t.ok(labelSelectorMatcher('  a = b ,  c  ')({ a: 'b', c: '1' }), 'whitespace is allowed around tokens');
  t.ok(labelSelectorMatcher('in in (in, notin)')({ in: 'notin' }), 'keywords are values in value position');
});

t.test('numeric comparisons', async (t) => {
  const gt = labelSelectorMatcher('rank>5');
  t.ok(gt({ rank: '6' }));
  t.notOk(gt({ rank: '5' }));
  t.notOk(gt({ rank: 'x' }), 'non-numeric label never matches');
  t.notOk(gt({}));
  t.ok(labelSelectorMatcher('rank<3')({ rank: '-5' }), 'negative label values compare numerically');
  badRequest(t, () => parseLabelSelector('rank<-1'), /values\[0\]\[rank\]: Invalid value: "-1"/);
  t.equal(parseLabelSelector('a>1').toString(), 'a>1');
  badRequest(t, () => parseLabelSelector('a>b'), /for 'Gt', 'Lt' operators, the value must be an integer/);
});

t.test('string form is canonical: sorted keys and values', async (t) => {
  t.equal(parseLabelSelector('z=1,a in (y,x),!b,c,d!=2,e notin (q)').toString(), 'a in (x,y),!b,c,d!=2,e notin (q),z=1');
  t.equal(parseLabelSelector('a==b').toString(), 'a==b');
  t.equal(parseLabelSelector('').toString(), '');
  t.ok(selectsEverything(parseLabelSelector('')));
  t.ok(selectsEverything(parseLabelSelector('   ')));
  t.notOk(selectsEverything(parseLabelSelector('a')));
});

t.test('Kubernetes-worded errors', async (t) => {
  badRequest(t, () => parseLabelSelector('a b'), "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
  badRequest(t, () => parseLabelSelector('a=b,'), "found '', expected: identifier after ','");
  badRequest(t, () => parseLabelSelector('a=b c'), "found 'c', expected: ',' or 'end of string'");
  badRequest(t, () => parseLabelSelector(',a'), "found ',', expected: !, identifier, or 'end of string'");
  badRequest(t, () => parseLabelSelector('a in b'), "unable to parse requirement: found 'b' expected: '('");
  badRequest(t, () => parseLabelSelector('a in (b'), /unable to parse requirement: found '', expected: ',' or '\)'/);
  badRequest(t, () => parseLabelSelector('!a=b'), "found '=', expected: ',' or 'end of string'");
  badRequest(t, () => parseLabelSelector('-bad=x'), /^unable to parse requirement: <nil>: Invalid value: "-bad": name part must consist of alphanumeric characters/);
  badRequest(t, () => parseLabelSelector('a=b@c'), /^unable to parse requirement: values\[0\]\[a\]: Invalid value: "b@c": a valid label must be an empty string/);
  badRequest(t, () => parseLabelSelector('a=' + 'x'.repeat(64)), /must be no more than 63 bytes/);
  badRequest(t, () => parseLabelSelector('Example.com/a=b'), /prefix part a lowercase RFC 1123 subdomain/);
});

t.test('key and value validation', async (t) => {
  t.same(labelKeyErrors('app'), []);
  t.same(labelKeyErrors('example.com/app.v1_x-y'), []);
  t.same(labelKeyErrors('kubernetes.io/metadata.name'), []);
  t.match(labelKeyErrors('a/b/c')[0], /a valid label key must consist of/);
  t.match(labelKeyErrors('/a')[0], /prefix part must be non-empty/);
  t.match(labelKeyErrors('')[0], /name part must be non-empty/);
  t.same(labelValueErrors(''), []);
  t.same(labelValueErrors('v1.2_3-4'), []);
  t.ok(labelValueErrors('-x').length);
});

t.test('metav1.LabelSelector objects', async (t) => {
  t.ok(selectsNothing(labelSelectorFromObject(null)), 'nil selects nothing');
  t.ok(selectsNothing(labelSelectorFromObject(undefined)));
  t.notOk(labelSelectorObjectMatcher(null)({ a: 'b' }));
  t.ok(selectsEverything(labelSelectorFromObject({})), 'empty selects everything');
  t.ok(labelSelectorObjectMatcher({})({}));
  const sel = {
    matchLabels: { app: 'web' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['b', 'a'] },
      { key: 'env', operator: 'NotIn', values: ['prod'] },
      { key: 'team', operator: 'Exists' },
      { key: 'old', operator: 'DoesNotExist' },
    ],
  };
  const m = labelSelectorObjectMatcher(sel);
  t.ok(m({ app: 'web', tier: 'a', team: 'x' }));
  t.notOk(m({ app: 'web', tier: 'c', team: 'x' }));
  t.notOk(m({ app: 'web', tier: 'a', team: 'x', old: '1' }));
  t.equal(labelSelectorAsString(sel), 'app=web,env notin (prod),!old,team,tier in (a,b)');
  t.equal(labelSelectorAsString({ matchLabels: { app: 'nginx' } }), 'app=nginx');
  t.equal(labelSelectorAsString(null), '');
  badRequest(t, () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }), '"Gt" is not a valid label selector operator');
  badRequest(t, () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }), /values: Invalid value: \[\]string\{\}: for 'in', 'notin' operators, values set can't be empty/);
  badRequest(t, () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }), /values set must be empty for exists and does not exist/);
  badRequest(t, () => labelSelectorFromObject({ matchLabels: { 'bad key': 'x' } }), /^key: Invalid value: "bad key"/);
});

t.test('helpers', async (t) => {
  t.equal(requiresExactMatch(parseLabelSelector('a=1,b in (2)'), 'a'), '1');
  t.equal(requiresExactMatch(parseLabelSelector('a=1,b in (2)'), 'b'), '2');
  t.equal(requiresExactMatch(parseLabelSelector('a!=1'), 'a'), undefined);
  t.equal(requiresExactMatch(parseLabelSelector('b=1'), 'a'), undefined);
  t.ok(everything.matches(undefined));
  t.notOk(nothing.matches({}));
  const s = selectorFromSet({ b: '2', a: '1' });
  t.equal(s.toString(), 'a=1,b=2');
  t.ok(s.matches({ a: '1', b: '2', c: '3' }));
  t.notOk(s.matches({ a: '1' }));
  t.ok(selectsEverything(selectorFromSet({})));
});
