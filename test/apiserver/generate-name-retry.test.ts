/**
 * generateName creates whose generated name is taken: retried under a new name from the body as
 * it came (decoded again, not copied up front), up to 8 attempts, then 409 AlreadyExists as
 * Kubernetes words it. The name's random bytes are pinned through nameEntropy to force the
 * collisions.
 */
import t from 'tap';
import { nameEntropy } from '../../src/daemons/apiserver/registry/object-meta.js';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const a = await startApiserver();
const c = await connectClient(a);
const realFill = nameEntropy.fill;
t.teardown(async () => {
  nameEntropy.fill = realFill;
  nameEntropy.discard();
  c.close();
  await a.stop();
});

/** Every suffix drawn from now on: `first` for the first name, then `rest`. */
function pinSuffixes(first: number, rest: number): void {
  nameEntropy.fill = (b) => { b.fill(rest); b.fill(first, 0, 5); };
  nameEntropy.discard();
}

const PODS = '/api/v1/namespaces/default/pods';
const pod = (meta: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: 'v1', kind: 'Pod', metadata: meta,
  spec: { containers: [{ name: 'c', image: 'busybox' }], automountServiceAccountToken: false },
});

t.test('a taken generated name is retried from the body as sent', async (t) => {
  // The byte 0 gives suffix "bbbbb", the byte 1 "ccccc".
  const taken = await c.request('POST', PODS, { body: pod({ name: 'gen-bbbbb', labels: { first: 'yes' } }) });
  t.equal(taken.status, 201);
  pinSuffixes(0, 1);
  const r = await c.request('POST', `${PODS}?fieldManager=maker`, { body: pod({ generateName: 'gen-', labels: { app: 'x' } }) });
  t.equal(r.status, 201, JSON.stringify(r.json));
  t.equal(r.json.metadata.name, 'gen-ccccc', 'the second attempt drew a new name');
  t.same(r.json.metadata.labels, { app: 'x' }, 'labels as sent, nothing of the first attempt');
  t.equal(r.json.spec.containers.length, 1);
  t.equal(r.json.spec.containers[0].terminationMessagePath, '/dev/termination-log', 'defaults applied once');
  t.equal(r.json.metadata.managedFields.length, 1, 'one managed-fields entry');
  t.equal(r.json.metadata.managedFields[0].manager, 'maker');
  const got = await c.request('GET', `${PODS}/gen-ccccc`);
  t.same(got.json.metadata.uid, r.json.metadata.uid, 'stored as answered');
  t.same(got.json.spec, r.json.spec);
  const first = await c.request('GET', `${PODS}/gen-bbbbb`);
  t.same(first.json.metadata.labels, { first: 'yes' }, 'the taken object is untouched');
});

t.test('eight taken names in a row: 409 AlreadyExists', async (t) => {
  pinSuffixes(0, 0);
  const r = await c.request('POST', PODS, { body: pod({ generateName: 'gen-' }) });
  t.equal(r.status, 409);
  t.equal(r.json.reason, 'AlreadyExists');
  t.equal(r.json.message, 'pods "gen-bbbbb" already exists, the server was not able to generate a unique name for the object');
  t.equal(r.json.details.retryAfterSeconds, 1);
});

t.test('a create with a name is not retried', async (t) => {
  pinSuffixes(1, 1);
  const r = await c.request('POST', PODS, { body: pod({ name: 'gen-bbbbb' }) });
  t.equal(r.status, 409);
  t.equal(r.json.message, 'pods "gen-bbbbb" already exists');
});
