/**
 * A pod watch whose field selector pins spec.nodeName (a node agent's) is kept in the watch
 * cache's trigger index, through the REST layer: watchTrigger reads the selector, the HTTP
 * watch registers in the index, and it gets its node's pods only.
 */
import t from 'tap';
import { pods } from '../../src/api/resources/core/pods.js';
import { configmaps } from '../../src/api/resources/core/configmaps.js';
import { watchTrigger } from '../../src/daemons/apiserver/rest/selector-dispatch.js';
import type { ObjectStoreInternals } from '../../src/storage/object-store.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';
import { waitFor } from '../helpers/wait-for.js';

t.test('watchTrigger: the pinned value of a trigger field, and nothing else', async (t) => {
  const trig = watchTrigger(pods, 'spec.nodeName=n1,metadata.namespace=default');
  t.match(trig, { field: 'spec.nodeName', value: 'n1' });
  t.equal(trig!.valueOf({ spec: { nodeName: 'n1' } }), 'n1', 'valueOf reads the field as the selector does');
  t.equal(trig!.valueOf({ spec: {} }), '', 'an unscheduled pod has the empty value');
  t.match(watchTrigger(pods, 'spec.nodeName=='), { value: '' }, 'unscheduled pods (the empty value)');
  t.equal(watchTrigger(pods, 'spec.nodeName!=n1'), undefined, 'a != requirement pins nothing');
  t.equal(watchTrigger(pods, 'metadata.name=x'), undefined, 'not a trigger field');
  t.equal(watchTrigger(pods, null), undefined);
  t.equal(watchTrigger(configmaps, 'metadata.name=x'), undefined, 'a definition without triggers');
});

t.test('an HTTP watch on spec.nodeName is indexed and gets its node\'s pods only', async (t) => {
  const a = await startApiserver({});
  const c = await connectClient(a);
  t.teardown(async () => { c.close(); await a.stop(); });
  const cache = (a.parts!.store as ObjectStore & ObjectStoreInternals).watchCacheFor('', 'pods')!;
  const rv = (await c.request('GET', '/api/v1/pods')).json.metadata.resourceVersion as string;
  const base = `/api/v1/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=20`;
  const before = cache.triggeredWatcherCount;
  const onN1 = c.stream(`${base}&fieldSelector=spec.nodeName%3Dn1`);
  const everything = c.stream(base);
  t.equal(await onN1.status(), 200);
  t.equal(await everything.status(), 200);
  await waitFor('the node watch in the index', () => cache.triggeredWatcherCount === before + 1);

  const pod = (name: string, node: string): Record<string, unknown> => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }], automountServiceAccountToken: false },
  });
  t.equal((await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('on-n2', 'n2') })).status, 201);
  t.equal((await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('on-n1', 'n1') })).status, 201);
  t.equal((await c.request('DELETE', '/api/v1/namespaces/default/pods/on-n1?gracePeriodSeconds=0')).status, 200);

  const added = JSON.parse((await onN1.next())!);
  t.match(added, { type: 'ADDED', object: { metadata: { name: 'on-n1' }, spec: { nodeName: 'n1' } } }, 'the n2 pod never came');
  const deleted = JSON.parse((await onN1.next())!);
  t.match(deleted, { type: 'DELETED', object: { metadata: { name: 'on-n1' } } });
  t.match(JSON.parse((await everything.next())!), { type: 'ADDED', object: { metadata: { name: 'on-n2' } } }, 'the unfiltered watch gets both');
  onN1.close();
  everything.close();
  await waitFor('the ended watch out of the index', () => cache.triggeredWatcherCount === before);
});
