// --allow-privileged (default false): a container asking for privileged mode is refused with
// Kubernetes' Forbidden "disallowed by cluster policy", in pods and in every pod template; with
// the option on it is accepted. The setting is process-wide (as Kubernetes' capabilities), so the
// two servers here run one after the other.
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const privileged = { privileged: true };
const pod = (name: string, init = false) => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name },
  spec: {
    containers: [{ name: 'c', image: 'busybox', ...(init ? {} : { securityContext: privileged }) }],
    ...(init ? { initContainers: [{ name: 'i', image: 'busybox', securityContext: privileged }] } : {}),
  },
});
const deployment = (name: string) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
  spec: {
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'busybox', securityContext: privileged }] } },
  },
});

type Causes = { details?: { causes?: { field: string; reason: string; message: string }[] } };

t.test('refused by default, in pods, init containers and pod templates', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const c = await connectClient(api);
  t.teardown(() => c.close());
  const cases = [
    ['/api/v1/namespaces/default/pods', pod('p1'), 'spec.containers[0].securityContext.privileged'],
    ['/api/v1/namespaces/default/pods', pod('p2', true), 'spec.initContainers[0].securityContext.privileged'],
    ['/apis/apps/v1/namespaces/default/deployments', deployment('d1'), 'spec.template.spec.containers[0].securityContext.privileged'],
  ] as const;
  for (const [path, body, field] of cases) {
    const r = await c.request('POST', path, { body });
    t.equal(r.status, 422, `${field}: Invalid`);
    const status = JSON.parse(r.body.toString()) as Causes & { reason: string };
    t.equal(status.reason, 'Invalid');
    t.same(status.details?.causes?.map((x) => [x.field, x.reason]), [[field, 'FieldValueForbidden']]);
    t.match(status.details?.causes?.[0]?.message, /disallowed by cluster policy/);
  }
  const plain = await c.request('POST', '/api/v1/namespaces/default/pods', { body: { ...pod('p3'), spec: { containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: false } }] } } });
  t.equal(plain.status, 201, 'privileged: false is fine');
});

t.test('accepted with --allow-privileged=true', async (t) => {
  const api = await startApiserver({ args: ['--allow-privileged=true'] });
  t.teardown(() => api.stop());
  const c = await connectClient(api);
  t.teardown(() => c.close());
  t.equal((await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('p1') })).status, 201);
  t.equal((await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: deployment('d1') })).status, 201);
});
