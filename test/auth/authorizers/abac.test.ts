// ABAC: the policy file format (v1beta1 and the legacy unversioned form, comments, blank lines,
// errors with the line number) and Kubernetes' matching rules; the start-up errors of
// --authorization-policy-file (one line naming the option and the line).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import type { AuthorizationAttributes } from '../../../src/auth/authorizer.js';
import { AbacAuthorizer, parsePolicyFile, parsePolicyLine, PolicyFileError } from '../../../src/auth/authorizers/abac.js';
import { runExpectingStartFailure } from '../../helpers/apiserver.js';

const v1 = (spec: Record<string, unknown>): string => JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec });

function res(user: string, groups: string[], verb: string, resource: string, namespace = '', apiGroup = ''): AuthorizationAttributes {
  return { user: { name: user, groups }, verb, isResourceRequest: true, path: '', namespace, apiGroup, apiVersion: 'v1', resource, subresource: '', name: '' };
}
function path(user: string, groups: string[], verb: string, p: string): AuthorizationAttributes {
  return { user: { name: user, groups }, verb, isResourceRequest: false, path: p, namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' };
}

function authorizer(lines: string[]): AbacAuthorizer {
  return new AbacAuthorizer(parsePolicyFile(lines.join('\n'), 'policy.jsonl').policies);
}
const allowed = (a: AbacAuthorizer, at: AuthorizationAttributes): boolean => (a.authorize(at) as { decision: string }).decision === 'allow';

t.test('subjects: user, group, * and system:authenticated; neither matches nobody', async (t) => {
  const a = authorizer([
    v1({ user: 'alice', namespace: '*', resource: '*', apiGroup: '*' }),
    v1({ group: 'devs', namespace: 'dev', resource: 'pods', apiGroup: '' }),
    v1({ user: '*', readonly: true, namespace: 'public', resource: '*', apiGroup: '*' }),
    v1({ namespace: '*', resource: '*', apiGroup: '*' }),
  ]);
  t.ok(allowed(a, res('alice', [], 'delete', 'secrets', 'kube-system')), 'alice: everything');
  t.ok(allowed(a, res('bob', ['devs'], 'create', 'pods', 'dev')), 'group devs: pods in dev');
  t.notOk(allowed(a, res('bob', ['devs'], 'create', 'pods', 'prod')), 'not in another namespace');
  t.notOk(allowed(a, res('bob', ['devs'], 'create', 'deployments', 'dev', 'apps')), 'not another resource or group');
  t.notOk(allowed(a, res('bob', ['devs'], 'create', 'pods', '')), 'an empty namespace matches only cluster-scoped requests');
  // `user: "*"` becomes group system:authenticated: anonymous is not matched.
  t.ok(allowed(a, res('carol', ['system:authenticated'], 'get', 'configmaps', 'public')), '* user: every authenticated user');
  t.notOk(allowed(a, res('system:anonymous', ['system:unauthenticated'], 'get', 'configmaps', 'public')), '* user does not match anonymous');
  t.notOk(allowed(a, res('carol', ['system:authenticated'], 'get', 'configmaps', 'other')), 'a policy without user or group matches nobody');
  t.same(a.authorize(res('carol', [], 'get', 'pods', 'x')), { decision: 'noOpinion', reason: 'No policy matched.' });
});

t.test('readonly maps to get, list, watch; a group and user both must match when both are set', async (t) => {
  const a = authorizer([
    v1({ user: 'ro', readonly: true, namespace: '*', resource: 'pods', apiGroup: '' }),
    v1({ user: 'both', group: 'g', namespace: '*', resource: '*', apiGroup: '*' }),
  ]);
  for (const verb of ['get', 'list', 'watch']) t.ok(allowed(a, res('ro', [], verb, 'pods', 'ns')), `readonly allows ${verb}`);
  for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection', 'impersonate']) t.notOk(allowed(a, res('ro', [], verb, 'pods', 'ns')), `readonly refuses ${verb}`);
  t.ok(allowed(a, res('both', ['g'], 'create', 'pods', 'ns')));
  t.notOk(allowed(a, res('both', ['h'], 'create', 'pods', 'ns')), 'user matches but group does not');
  t.notOk(allowed(a, res('other', ['g'], 'create', 'pods', 'ns')), 'group matches but user does not');
});

t.test('non-resource paths: exact, *, trailing * prefix; resource and non-resource policies never cross', async (t) => {
  const a = authorizer([
    v1({ user: 'u', nonResourcePath: '/healthz' }),
    v1({ user: 'u', nonResourcePath: '/apis/*' }),
    v1({ user: 'w', nonResourcePath: '*' }),
    v1({ user: 'r', namespace: '*', resource: '*', apiGroup: '*' }),
  ]);
  t.ok(allowed(a, path('u', [], 'get', '/healthz')));
  t.notOk(allowed(a, path('u', [], 'get', '/healthz/etcd')), 'exact means exact');
  t.ok(allowed(a, path('u', [], 'get', '/apis/apps/v1')));
  t.ok(allowed(a, path('u', [], 'get', '/apis/')), 'prefix match');
  t.notOk(allowed(a, path('u', [], 'get', '/api/v1')));
  t.ok(allowed(a, path('w', [], 'post', '/anything')));
  t.notOk(allowed(a, res('w', [], 'get', 'pods', 'ns')), 'a path policy does not match a resource request');
  t.notOk(allowed(a, path('r', [], 'get', '/healthz')), 'a resource policy does not match a path');
});

t.test('the legacy unversioned form converts as Kubernetes converts it', async (t) => {
  const l = parsePolicyLine('{"user":"admin"}');
  t.ok(l.unversioned);
  t.same(l.policy, { user: 'admin', group: '', readonly: false, apiGroup: '*', namespace: '*', resource: '*', nonResourcePath: '*' });
  t.same(parsePolicyLine('{"readonly": true}').policy.group, 'system:authenticated', 'no user, no group: every authenticated user');
  t.same(parsePolicyLine('{"user":"*","resource":"pods"}').policy, { user: '', group: 'system:authenticated', readonly: false, apiGroup: '*', namespace: '*', resource: 'pods', nonResourcePath: '' });
  t.same(parsePolicyLine('{"apiVersion":"abac.authorization.kubernetes.io/v0","kind":"Policy","user":"x","namespace":"n"}').policy,
    { user: 'x', group: '', readonly: false, apiGroup: '*', namespace: 'n', resource: '*', nonResourcePath: '' }, 'explicit v0 is the same form');
  const a = authorizer(['{"user":"admin"}', '{"user":"scheduler","readonly":true,"resource":"pods"}']);
  t.ok(allowed(a, res('admin', [], 'delete', 'deployments', 'x', 'apps')));
  t.ok(allowed(a, path('admin', [], 'get', '/metrics')));
  t.ok(allowed(a, res('scheduler', [], 'list', 'pods', '')), 'an empty legacy namespace matches all');
  t.notOk(allowed(a, res('scheduler', [], 'create', 'pods', 'x')));
  t.notOk(allowed(a, path('scheduler', [], 'get', '/metrics')), 'a resource given: no paths');
});

t.test('file: blank lines and # comments are skipped; a bad line is an error with its number', async (t) => {
  const ok = parsePolicyFile(['# policies', '', '   # indented comment', v1({ user: 'a', nonResourcePath: '*' }), '  ', '{"user":"b"}', ''].join('\n'), 'p');
  t.equal(ok.policies.length, 2);
  t.equal(ok.unversionedLines, 1);
  const bad = (text: string): string => { try { parsePolicyFile(text, '/etc/abac.jsonl'); return ''; } catch (e) { t.ok(e instanceof PolicyFileError); return (e as Error).message; } };
  t.match(bad(['# c', v1({ user: 'a' }), '{"user": "b",}'].join('\n')), /^error reading policy file \/etc\/abac\.jsonl, line 3: \{"user": "b",\}: invalid JSON/);
  t.match(bad(['', JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v2', kind: 'Policy', spec: {} })].join('\n')), /line 2: .*no kind "Policy" is registered for version "abac.authorization.kubernetes.io\/v2"/);
  t.match(bad(JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Role', spec: {} })), /line 1: .*no kind "Role"/);
  t.match(bad(v1({ user: 'a', readonly: 'yes' })), /line 1: .*cannot unmarshal string into Go struct field PolicySpec\.readonly of type bool/);
  t.match(bad('[1,2]'), /line 1: .*must be a JSON object/);
  for (const m of [bad('{'), bad(v1({ user: 3 }))]) t.notMatch(m, /\n/, 'one line');
});

t.test('rulesFor lists the user\'s policies in a namespace', async (t) => {
  const a = authorizer([
    v1({ user: 'u', readonly: true, namespace: 'ns', resource: 'pods', apiGroup: '' }),
    v1({ group: 'g', namespace: '*', resource: '*', apiGroup: 'apps' }),
    v1({ user: 'u', nonResourcePath: '/version' }),
    v1({ user: 'u', namespace: 'other', resource: 'secrets', apiGroup: '' }),
  ]);
  t.same(await a.rulesFor({ name: 'u', groups: ['g'] }, 'ns'), {
    resourceRules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods'] }, { verbs: ['*'], apiGroups: ['apps'], resources: ['*'] }],
    nonResourceRules: [],
    incomplete: false,
  });
});

t.test('start-up: a bad, missing or unneeded policy file stops the start with one line naming the option', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'abac-start-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'policy.jsonl');
  await writeFile(file, ['# ok', v1({ user: 'admin', namespace: '*', resource: '*', apiGroup: '*' }), '', '{"user": "x", oops}', ''].join('\n'));
  const log = pino({ level: 'silent' });
  const cases: Array<[string[], RegExp]> = [
    [['--authorization-mode=ABAC', `--authorization-policy-file=${file}`], /^apiserver: --authorization-policy-file: error reading policy file .*policy\.jsonl, line 4: /],
    [['--authorization-mode=ABAC', `--authorization-policy-file=${join(dir, 'missing')}`], /^apiserver: --authorization-policy-file: error reading policy file .*missing: ENOENT/],
    [['--authorization-mode=ABAC'], /^apiserver: --authorization-policy-file: required by --authorization-mode ABAC/],
    [['--authorization-mode=AlwaysAllow', `--authorization-policy-file=${file}`], /^apiserver: --authorization-policy-file: cannot be given without --authorization-mode ABAC/],
  ];
  for (const [args, want] of cases) {
    const { code, stderr } = await runExpectingStartFailure(['--secure-port=0', `--data-dir=${join(dir, 'data')}`, `--cert-dir=${join(dir, 'certs')}`, ...args], log);
    t.equal(code, 1, args.join(' '));
    t.match(stderr, want);
    t.equal(stderr.trim().split('\n').length, 1, 'one line');
  }
});
