// Escalation checks as Kubernetes' Covers / CompactRules / ConfirmNoEscalation: coverage of
// verbs, groups, resources (incl. */sub), resourceNames and nonResourceURLs, and the message.
import t from 'tap';
import { compactRules, compactString, covers } from '../../../src/auth/authorizers/rbac/escalation.js';
import type { PolicyRule } from '../../../src/auth/authorizers/rbac/rule-match.js';

const r = (verbs: string[], apiGroups: string[], resources: string[], resourceNames?: string[]): PolicyRule =>
  ({ verbs, apiGroups, resources, ...(resourceNames ? { resourceNames } : {}) });

t.test('covers', async (t) => {
  const admin = [r(['*'], ['*'], ['*']), { verbs: ['*'], nonResourceURLs: ['*'] }];
  t.ok(covers(admin, [r(['get'], ['apps'], ['deployments']), { verbs: ['get'], nonResourceURLs: ['/healthz'] }]).covered, 'wildcards cover all');
  const view = [r(['get', 'list', 'watch'], [''], ['pods', 'services'])];
  t.ok(covers(view, [r(['get', 'list'], [''], ['pods'])]).covered);
  t.notOk(covers(view, [r(['delete'], [''], ['pods'])]).covered, 'another verb');
  t.notOk(covers(view, [r(['get'], ['apps'], ['pods'])]).covered, 'another group');
  t.same(covers(view, [r(['get', 'delete'], [''], ['pods', 'secrets'])]).missing,
    [r(['delete'], [''], ['pods']), r(['get'], [''], ['secrets']), r(['delete'], [''], ['secrets'])], 'the missing pieces');
  t.ok(covers([r(['get'], [''], ['*/status'])], [r(['get'], [''], ['pods/status'])]).covered, '*/sub covers a subresource');
  t.notOk(covers([r(['get'], [''], ['*/status'])], [r(['get'], [''], ['pods'])]).covered);
  t.notOk(covers([r(['get'], [''], ['pods'], ['a'])], [r(['get'], [''], ['pods'])]).covered, 'names do not cover every name');
  t.ok(covers([r(['get'], [''], ['pods'], ['a', 'b'])], [r(['get'], [''], ['pods'], ['b'])]).covered, 'names cover those names');
  t.ok(covers([r(['get'], [''], ['pods'])], [r(['get'], [''], ['pods'], ['b'])]).covered, 'no names cover any name');
  t.ok(covers([{ verbs: ['get'], nonResourceURLs: ['/logs/*'] }], [{ verbs: ['get'], nonResourceURLs: ['/logs/a/b'] }]).covered, 'URL prefix');
  t.notOk(covers([{ verbs: ['get'], nonResourceURLs: ['/logs'] }], [{ verbs: ['get'], nonResourceURLs: ['/logs/a'] }]).covered);
});

t.test('compact strings', async (t) => {
  const missing = [r(['get'], [''], ['secrets']), r(['list'], [''], ['secrets']), r(['get'], [''], ['pods'], ['x']), { verbs: ['get'], nonResourceURLs: ['/metrics'] }];
  t.same(compactRules(missing).map(compactString).sort(), [
    '{APIGroups:[""], Resources:["pods"], ResourceNames:["x"], Verbs:["get"]}',
    '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
  ]);
});
