// The controller manager's event recorder: repeats aggregate into one Event, and one object
// can cause at most 25 events before the spam filter drops the rest.
import t from 'tap';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { newEventRecorder } from '../../src/daemons/controller-manager/events.js';
import { startApiserver } from '../helpers/apiserver.js';

t.test('aggregation and the per-object spam filter', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0, contentType: 'application/json' });
  t.teardown(() => client.close());
  const rec = newEventRecorder(client, 'test-controller', pino({ level: 'silent' }));
  const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs', namespace: 'default', uid: 'uid-rs-1' } };
  for (let i = 0; i < 3; i++) { rec.event(owner, 'Normal', 'Same', 'the same message'); await rec.flush(); }
  for (let i = 0; i < 40; i++) rec.event(owner, 'Normal', 'SuccessfulCreate', `Created pod: p-${i}`);
  await rec.flush();
  const list = await client.list({ group: '', version: 'v1', resource: 'events', namespace: 'default' });
  const items = (list.items ?? []) as Array<{ reason: string; count: number }>;
  const same = items.filter((e) => e.reason === 'Same');
  t.equal(same.length, 1, 'repeats are one Event');
  t.equal(same[0]?.count, 3, 'with count 3');
  t.equal(items.filter((e) => e.reason === 'SuccessfulCreate').length, 22, '25 events per object in a burst (3 used by the repeats), the rest dropped');
  const other = { ...owner, metadata: { ...owner.metadata, name: 'rs2', uid: 'uid-rs-2' } };
  rec.event(other, 'Normal', 'SuccessfulCreate', 'Created pod: q');
  await rec.flush();
  const after = await client.list({ group: '', version: 'v1', resource: 'events', namespace: 'default' });
  t.equal(((after.items ?? []) as Array<{ involvedObject: { name: string } }>).filter((e) => e.involvedObject.name === 'rs2').length, 1, 'another object has its own budget');
});
