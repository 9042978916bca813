// Graceful pod deletion: while a bound pod is being stopped, status writes keep it; the node
// agent's final delete with grace 0 removes it. (Kubernetes' store deletes on update only when
// the pending deletion is not graceful.)
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

t.test('status writes during a graceful deletion keep the pod', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const c = await connectClient(api);
  t.teardown(() => c.close());
  const base = '/api/v1/namespaces/default/pods';
  const created = await c.request('POST', base, { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'g' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', image: 'busybox' }] } } });
  t.equal(created.status, 201);
  const del = await c.request('DELETE', `${base}/g`, { body: { propagationPolicy: 'Background' } });
  t.equal(del.status, 200, 'graceful delete answered with the object');
  t.ok(del.json.metadata.deletionTimestamp, 'marked for deletion');
  t.equal(del.json.metadata.deletionGracePeriodSeconds, 30);
  const status = await c.request('PATCH', `${base}/g/status`, { raw: JSON.stringify({ status: { phase: 'Running' } }), contentType: 'application/merge-patch+json' });
  t.equal(status.status, 200, 'status write accepted');
  t.equal((await c.request('GET', `${base}/g`)).status, 200, 'still there after the status write');
  const final = await c.request('DELETE', `${base}/g`, { body: { gracePeriodSeconds: 0, preconditions: { uid: created.json.metadata.uid } } });
  t.equal(final.status, 200);
  t.equal((await c.request('GET', `${base}/g`)).status, 404, 'gone after the final delete');
});
