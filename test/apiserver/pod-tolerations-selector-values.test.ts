/**
 * Two validation rules through the real API server, with Kubernetes' field paths and wording:
 * pod tolerations (ValidateTolerations, as for RuntimeClass scheduling: key, operator, value,
 * effect, tolerationSeconds) and label selector expressions whose values must be label values.
 */
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, type Reply } from '../helpers/rest-client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
const causes = (r: Reply): Array<[string, string]> => (r.json?.details?.causes ?? []).map((x: Any) => [x.field, x.message]);
const pod = (name: string, spec: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec } });

t.test('pod tolerations and selector expression values are validated as Kubernetes does', async (t) => {
  const a = await startApiserver({});
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });

  const bad = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('tol', { tolerations: [
    { operator: 'Equal', value: 'v' },
    { key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 },
    { key: 'k', operator: 'Bogus' },
    { key: 'k', operator: 'Exists', effect: 'Sometimes' },
    { key: 'k', operator: 'Exists', value: 'v' },
    { key: 'bad key!', operator: 'Exists' },
    { key: 'k', value: 'not a label value!' },
  ] }) });
  t.equal(bad.status, 422);
  t.same(causes(bad).map(([f]) => f), [
    'spec.tolerations[0].operator', 'spec.tolerations[1].effect', 'spec.tolerations[2].operator', 'spec.tolerations[3].effect',
    'spec.tolerations[4].operator', 'spec.tolerations[5].key', 'spec.tolerations[6].operator',
  ]);
  t.match(causes(bad)[0]![1], /operator must be Exists when `key` is empty/);
  t.match(causes(bad)[1]![1], /effect must be 'NoExecute' when `tolerationSeconds` is set/);
  t.match(causes(bad)[5]![1], /name part must consist of alphanumeric characters/);

  const ok = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('tol-ok', { tolerations: [
    { operator: 'Exists' },
    { key: 'example.com/gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
    { key: 'k', operator: 'Exists' }, { key: 'k', operator: 'Exists' },
  ] }) });
  t.equal(ok.status, 201, 'valid tolerations, duplicates included (pods allow them), are accepted');

  const deployment = (values: unknown[]) => ({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'sel' },
    spec: {
      selector: { matchLabels: { app: 'a' }, matchExpressions: [{ key: 'tier', operator: 'In', values }] },
      template: { metadata: { labels: { app: 'a', tier: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    },
  });
  const badSel = await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: deployment(['web', 'not valid!']) });
  t.equal(badSel.status, 422);
  t.same(causes(badSel).map(([f]) => f), ['spec.selector.matchExpressions[0].values[1]']);
  t.match(causes(badSel)[0]![1], /^Invalid value: "not valid!": a valid label must be an empty string or consist of alphanumeric characters/);
  const goodSel = await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: deployment(['web', 'api']) });
  t.equal(goodSel.status, 201);
});
