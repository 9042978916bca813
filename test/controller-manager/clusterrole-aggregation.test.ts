import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { ClusterRoleAggregationController, aggregatedRules } from '../../src/daemons/controller-manager/controllers/clusterrole-aggregation.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

const ROLES: ResourceRef = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' };
const LABEL = 'rbac.example.com/aggregate-to-monitoring';

type Rule = Record<string, unknown>;
const rule = (resources: string[], verbs: string[], apiGroups = ['']): Rule => ({ apiGroups, resources, verbs });

function role(name: string, rules: Rule[], labels: Record<string, string> = {}, aggregationRule?: unknown): KubeObject {
  return { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules, ...(aggregationRule ? { aggregationRule } : {}) };
}

t.test('clusterrole-aggregation is selectable', async (t) => {
  await assertSelectable(t, 'clusterrole-aggregation');
});

t.test('the union: selectors in order, roles by name, duplicates dropped, itself excluded', async (t) => {
  const agg = role('agg', [], { tier: 'x' }, { clusterRoleSelectors: [{ matchLabels: { tier: 'b' } }, { matchLabels: { tier: 'x' } }] });
  const all = [
    agg,
    role('z', [rule(['pods'], ['get'])], { tier: 'x' }),
    role('a', [rule(['services'], ['list']), { verbs: ['get'], apiGroups: [''], resources: ['pods'] }], { tier: 'x' }),
    role('m', [rule(['nodes'], ['get'], [])], { tier: 'b' }),
    role('other', [rule(['secrets'], ['get'])], { tier: 'y' }),
  ];
  t.same(aggregatedRules(agg, all), [
    rule(['nodes'], ['get'], []),
    rule(['services'], ['list']),
    { verbs: ['get'], apiGroups: [''], resources: ['pods'] },
  ], "z's pods rule is the same rule as a's (field order does not matter)");
  t.throws(() => aggregatedRules(role('bad', [], {}, { clusterRoleSelectors: [{ matchExpressions: [{ key: 'k', operator: 'Nope' }] }] }), all), /not a valid label selector operator/);
});

t.test('aggregation against a real API server', async (t) => {
  const c = await startControllers(new ClusterRoleAggregationController());
  t.teardown(() => c.stop());
  const rulesOf = async (name: string): Promise<Rule[]> => ((await c.client.get(ROLES, name)).rules as Rule[] | undefined) ?? [];
  // The API server writes a rule's fields in its schema order: compare with sorted keys.
  const norm = (rules: Rule[]): string => JSON.stringify(rules.map((r) => Object.keys(r).sort().map((k) => [k, r[k]])));
  const same = (a: Rule[], b: Rule[]): boolean => norm(a) === norm(b);

  const pods = rule(['pods'], ['get', 'list']);
  const services = rule(['services'], ['get']);
  const nodes = rule(['nodes'], ['get']);
  await c.client.create(ROLES, role('monitoring-a', [pods], { [LABEL]: 'true' }));
  await c.client.create(ROLES, role('monitoring-b', [services, pods], { [LABEL]: 'true' }));
  await c.client.create(ROLES, role('unrelated', [rule(['secrets'], ['*'])]));
  await c.client.create(ROLES, role('monitoring', [], {}, { clusterRoleSelectors: [{ matchLabels: { [LABEL]: 'true' } }] }));

  await t.test('the union of the labelled roles appears', async (t) => {
    t.ok(await waitFor('aggregated rules', async () => same(await rulesOf('monitoring'), [pods, services])));
  });

  await t.test('changing a labelled role changes the union', async (t) => {
    const b = await c.client.get(ROLES, 'monitoring-b');
    await c.client.update(ROLES, { ...b, rules: [services, pods, nodes] });
    t.ok(await waitFor('rules follow', async () => same(await rulesOf('monitoring'), [pods, services, nodes])));
  });

  await t.test('deleting a labelled role shrinks the union', async (t) => {
    await c.client.delete(ROLES, 'monitoring-b');
    t.ok(await waitFor('rules shrink', async () => same(await rulesOf('monitoring'), [pods])));
  });

  await t.test('a role losing its label leaves the union', async (t) => {
    const a = await c.client.get(ROLES, 'monitoring-a');
    await c.client.update(ROLES, { ...a, metadata: { ...a.metadata, labels: {} } });
    t.ok(await waitFor('rules empty', async () => same(await rulesOf('monitoring'), [])));
  });
});

t.test('the default admin, edit and view roles are filled from the bootstrap policy', async (t) => {
  const c = await startControllers(new ClusterRoleAggregationController());
  t.teardown(() => c.stop());
  const grants = async (role: string, resource: string, verb: string): Promise<boolean> => {
    try {
      const rules = ((await c.client.get(ROLES, role)).rules as Array<{ resources?: string[]; verbs?: string[] }> | undefined) ?? [];
      return rules.some((r) => !!r.resources?.includes(resource) && !!r.verbs?.includes(verb));
    } catch { return false; }
  };
  t.ok(await waitFor('view reads pods', () => grants('view', 'pods', 'list')));
  t.ok(await waitFor('edit (view + system:aggregate-to-edit) writes pods and reads them', async () => await grants('edit', 'pods', 'create') && await grants('edit', 'pods', 'list')));
  t.ok(await waitFor('admin (edit + system:aggregate-to-admin) grants roles', async () => await grants('admin', 'roles', 'create') && await grants('admin', 'pods', 'create')));
  t.notOk(await grants('view', 'secrets', 'get'), 'view does not read secrets');
});
