// Issue 36: error bodies byte for byte as kube-apiserver writes them, for each Status reason a
// client meets: AlreadyExists, NotFound, Conflict, Invalid (with causes), Forbidden, Gone
// (Expired) and TooManyRequests. The expected bodies are Kubernetes' own, in the form its
// encoder writes (Go's field order: kind, apiVersion, metadata, status, message, reason,
// details, code; details as name, group, kind, causes; a newline at the end), as they appear in
// Kubernetes' documentation and in client test suites that compare them (e.g. the Python
// client's `Error from server (Conflict): {"kind":"Status",...,"code":409}\n`).
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient, eventually } from '../helpers/rest-client.js';

const NS = '/api/v1/namespaces/default';

const status = (message: string, reason: string, code: number, details?: string): string =>
  `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":${JSON.stringify(message)},"reason":"${reason}",${details ? `"details":${details},` : ''}"code":${code}}\n`;

t.test('Status bodies are byte-identical to Kubernetes\'', async (t) => {
  const a = await startApiserver({ args: ['--authorization-mode=RBAC', '--watch-cache=false', '--kvstore-compaction-interval=1s'] });
  t.teardown(() => a.stop());
  const c = await connectClient(a);
  t.teardown(() => c.close());
  const cm = (name: string, rv?: string): object => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(rv ? { resourceVersion: rv } : {}) }, data: { k: 'v' } });

  const created = await c.request('POST', `${NS}/configmaps`, { body: cm('dup') });
  t.equal(created.status, 201);
  t.ok(created.body.toString().endsWith('}\n'), 'an object body ends with the newline, too');
  const firstRv = created.json.metadata.resourceVersion as string;

  const dup = await c.request('POST', `${NS}/configmaps`, { body: cm('dup') });
  t.equal(dup.body.toString(), status('configmaps "dup" already exists', 'AlreadyExists', 409, '{"name":"dup","kind":"configmaps"}'), 'AlreadyExists');

  const missing = await c.request('GET', `${NS}/configmaps/missing`);
  t.equal(missing.body.toString(), status('configmaps "missing" not found', 'NotFound', 404, '{"name":"missing","kind":"configmaps"}'), 'NotFound');

  const deployment = await c.request('GET', '/apis/apps/v1/namespaces/default/deployments/web');
  t.equal(deployment.body.toString(), status('deployments.apps "web" not found', 'NotFound', 404, '{"name":"web","group":"apps","kind":"deployments"}'), 'NotFound in a named group');

  await c.request('PUT', `${NS}/configmaps/dup`, { body: { ...cm('dup'), data: { k: 'v2' } } });
  const stale = await c.request('PUT', `${NS}/configmaps/dup`, { body: cm('dup', firstRv) });
  t.equal(stale.body.toString(), status('Operation cannot be fulfilled on configmaps "dup": the object has been modified; please apply your changes to the latest version and try again',
    'Conflict', 409, '{"name":"dup","kind":"configmaps"}'), 'Conflict');

  const rfc1123 = 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')';
  const invalid = await c.request('POST', `${NS}/configmaps`, { body: cm('BAD') });
  t.equal(invalid.body.toString(), status(`ConfigMap "BAD" is invalid: metadata.name: Invalid value: "BAD": ${rfc1123}`, 'Invalid', 422,
    `{"name":"BAD","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":${JSON.stringify(`Invalid value: "BAD": ${rfc1123}`)},"field":"metadata.name"}]}`), 'Invalid with causes');

  const forbidden = await c.request('GET', `${NS}/pods`, { headers: { 'impersonate-user': 'alice' } });
  t.equal(forbidden.body.toString(), status('pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"', 'Forbidden', 403, '{"kind":"pods"}'), 'Forbidden');

  // Past compaction (every second here) an exact list at the first revision is gone.
  let n = 0;
  const gone = await eventually(async () => {
    await c.request('POST', `${NS}/configmaps`, { body: cm(`c${n++}`) });
    const r = await c.request('GET', `${NS}/configmaps?resourceVersion=${firstRv}&resourceVersionMatch=Exact`);
    return r.status === 410 ? r : undefined;
  }, 20_000);
  t.equal(gone.body.toString(), status('The resourceVersion for the provided list is too old.', 'Expired', 410), 'Gone (Expired)');

  // A budget the disruption controller has not processed: the eviction is refused with 429.
  t.equal((await c.request('POST', `${NS}/pods`, { body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { app: 'p' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } })).status, 201);
  // Running and ready (a pending pod is evicted without asking budgets).
  t.equal((await c.request('PATCH', `${NS}/pods/p/status`, { raw: JSON.stringify({ status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }), contentType: 'application/merge-patch+json' })).status, 200);
  t.equal((await c.request('POST', '/apis/policy/v1/namespaces/default/poddisruptionbudgets', { body: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'fresh' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'p' } } } } })).status, 201);
  const evicted = await c.request('POST', `${NS}/pods/p/eviction`, { body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p' } } });
  t.equal(evicted.body.toString(), status('Cannot evict pod as it would violate the pod\'s disruption budget.', 'TooManyRequests', 429,
    '{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget fresh is still being processed by the server."}]}'), 'TooManyRequests');
});
