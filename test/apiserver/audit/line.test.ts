// The json log line a record writes straight (AuditRecord.line) is byte for byte the encoding of
// the Event it would build (format.ts's encodeEvent, itself JSON.stringify's bytes): every stage,
// with impersonation, proxy headers, odd characters, statuses, annotations and bodies; frozen
// (shared) users and their cached JSON never mix two callers up; a line is told ASCII (its bytes
// copied by the log) only when it is, and a plain one is.
import t, { type Test } from 'tap';
import { AuditRecord, type AuditEvent } from '../../../src/daemons/apiserver/audit/event.js';
import { microTime } from '../../../src/api/meta/time.js';
import { formatLine } from '../../../src/daemons/apiserver/audit/format.js';
import { AuditPolicy, type Stage } from '../../../src/daemons/apiserver/audit/policy.js';
import type { RequestInfo } from '../../../src/daemons/apiserver/request-info.js';
import type { ApiRequest, UserInfo } from '../../../src/daemons/apiserver/context.js';

const policy = (level: string, extra = ''): AuditPolicy => AuditPolicy.parse(`apiVersion: audit.k8s.io/v1\nkind: Policy\n${extra}rules:\n- level: ${level}\n`);

function info(o: Partial<RequestInfo> = {}): RequestInfo {
  return {
    isResourceRequest: true, path: '/api/v1/namespaces/ns/configmaps/c', verb: 'get', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1',
    namespace: 'ns', resource: 'configmaps', subresource: '', name: 'c', parts: [], ...o,
  };
}

function req(url: string, headers: Record<string, string> = {}, remote = '::ffff:127.0.0.1'): ApiRequest {
  return { url, method: 'GET', headers, socket: { remoteAddress: remote } } as unknown as ApiRequest;
}

const stages: Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

/** line() against the Event's encoding, with the stage timestamps made equal. */
function same(t: Test, rec: AuditRecord, what: string, impersonated?: UserInfo, reqType?: string, resType?: string): void {
  for (const stage of stages) {
    const ev: AuditEvent = rec.event(stage, impersonated, reqType, resType);
    const line = rec.line(stage, impersonated, reqType, resType);
    // The log copies an ASCII line's bytes (latin1): never for a line with any other character
    // (lines with bodies are always encoded).
    if (rec.lineAscii) t.ok(/^[\x00-\x7f]*$/.test(line), `${what}: ${stage} is told ASCII and is`);
    const fromEvent = formatLine(ev, 'json');
    const stamp = (s: string): string => s.replace(/"stageTimestamp":"[^"]*"/, '"stageTimestamp":"T"');
    t.equal(stamp(line), stamp(fromEvent), `${what}: ${stage}`);
    t.equal(stamp(line), stamp(`${JSON.stringify(ev)}\n`), `${what}: ${stage} is JSON.stringify's bytes`);
  }
}

t.test('the same bytes as the Event, stage by stage', async (t) => {
  const alice: UserInfo = { name: 'alice', uid: 'u-1', groups: ['devs', 'system:authenticated'], extra: { 'scopes.x/y': ['a', 'b"c'] } };
  const meta = new AuditRecord(policy('Metadata').evaluate({ user: alice, verb: 'get', isResourceRequest: true, path: '/', apiGroup: '', namespace: 'ns', resource: 'configmaps', subresource: '', name: 'c' }),
    'id-1', req('/api/v1/namespaces/ns/configmaps/c?x="1"\u0001', { 'user-agent': 'kubectl/v1.33.0 (linux/amd64) \u00e9' }), info(), alice);
  same(t, meta, 'fresh');
  meta.annotate('authorization.k8s.io/decision', 'allow');
  meta.annotate('authorization.k8s.io/reason', 'RBAC: allowed by "x"\n');
  meta.noteStatus({ code: 200 });
  same(t, meta, 'answered', { name: 'bob', groups: ['g'] });
  meta.noteStatus({ status: 'Failure', message: 'no "way"', reason: 'NotFound', details: { name: 'c', kind: 'configmaps' }, code: 404 });
  same(t, meta, 'a Status');

  const proxied = new AuditRecord(policy('Metadata').evaluate({ user: alice, verb: 'create', isResourceRequest: true, path: '/', apiGroup: 'apps', namespace: 'ns', resource: 'deployments', subresource: '', name: '' }),
    'id-2', req('/apis/apps/v1/namespaces/ns/deployments', { 'x-forwarded-for': '10.0.0.1, 10.0.0.2', 'x-real-ip': '10.0.0.3' }), info({ apiGroup: 'apps', resource: 'deployments', name: '', verb: 'create' }), alice);
  same(t, proxied, 'proxy headers, before the name is known');
  proxied.noteObject({ name: 'd', namespace: 'ns', uid: 'u', resourceVersion: '7' });
  same(t, proxied, 'after the object named itself');

  const nonResource = new AuditRecord(policy('Metadata').evaluate({ user: { name: '', groups: [] }, verb: 'get', isResourceRequest: false, path: '/healthz', apiGroup: '', namespace: '', resource: '', subresource: '', name: '' }),
    'id-3', req('/healthz', {}, ''), info({ isResourceRequest: false, resource: '', namespace: '', name: '', apiVersion: '', path: '/healthz' }), { name: '', groups: [] });
  same(t, nonResource, 'no user, no address, no object');
});

t.test('bodies at Request and RequestResponse level, omitManagedFields', async (t) => {
  const u: UserInfo = { name: 'admin', groups: ['system:masters'] };
  for (const [level, extra] of [['Request', ''], ['RequestResponse', ''], ['RequestResponse', 'omitManagedFields: true\n']] as const) {
    const rec = new AuditRecord(policy(level, extra).evaluate({ user: u, verb: 'create', isResourceRequest: true, path: '/', apiGroup: '', namespace: 'ns', resource: 'configmaps', subresource: '', name: '' }),
      'id-b', req('/api/v1/namespaces/ns/configmaps'), info({ verb: 'create', name: '' }), u);
    rec.requestBody = Buffer.from('{"kind":"ConfigMap","metadata":{"name":"c","managedFields":[{}]},"data":{"k":"v\\u2028"}}');
    rec.responseBody = [Buffer.from('{"kind":"ConfigMap","metadata":{"name":"c","managedFields":[{}]}}')];
    rec.noteStatus({ code: 201 });
    same(t, rec, `${level}${extra ? ' omitManagedFields' : ''}`, undefined, 'application/json', 'application/json');
    rec.requestBody = Buffer.from('kind: ConfigMap\nmetadata:\n  name: y\n');
    same(t, rec, `${level}: a YAML body`, undefined, 'application/yaml', 'application/json');
  }
});

t.test('frozen users: one shared audit user and JSON per user object, never another caller\'s', async (t) => {
  const d = policy('Metadata').evaluate({ user: { name: 'x', groups: [] }, verb: 'get', isResourceRequest: false, path: '/', apiGroup: '', namespace: '', resource: '', subresource: '', name: '' });
  const users = [
    Object.freeze({ name: 'a', groups: Object.freeze(['g1']) as string[] }),
    Object.freeze({ name: 'a', groups: Object.freeze(['g2']) as string[] }),
    Object.freeze({ name: 'a', groups: Object.freeze([]) as unknown as string[] }),
    { name: 'a', groups: ['g1', 'g2'] },
    { name: 'a\u0000groups', groups: [] },
    { name: 'a', groups: ['\u0000groups'] },
  ];
  for (let round = 0; round < 2; round++) {
    for (const u of users) {
      const rec = new AuditRecord(d, 'id', req('/'), info({ isResourceRequest: false }), u);
      const parsed = JSON.parse(rec.line('RequestReceived', undefined, undefined, undefined)) as { user: unknown };
      t.same(parsed.user, { username: u.name, ...(u.groups.length ? { groups: u.groups } : {}) }, `${JSON.stringify(u)} (round ${round})`);
    }
  }
  const shared = users[0]!;
  const r1 = new AuditRecord(d, 'id', req('/'), info({ isResourceRequest: false }), shared);
  const r2 = new AuditRecord(d, 'id', req('/'), info({ isResourceRequest: false }), shared);
  t.equal(r1.user, r2.user, 'one audit user for one frozen user');
  t.ok(Object.isFrozen(r1.user) && Object.isFrozen(r1.user.groups));
});

t.test('a plain line is told ASCII (the log copies its bytes); any other character makes it encoded', async (t) => {
  const d = policy('Metadata').evaluate({ user: { name: 'x', groups: [] }, verb: 'get', isResourceRequest: true, path: '/', apiGroup: '', namespace: 'ns', resource: 'configmaps', subresource: '', name: 'c' });
  const plain = new AuditRecord(d, 'id-1', req('/api/v1/namespaces/ns/configmaps/c', { 'user-agent': 'kubectl/v1.33.0' }), info(), { name: 'alice', groups: ['devs'] });
  plain.annotate('authorization.k8s.io/decision', 'allow');
  plain.noteStatus({ code: 200 });
  plain.line('ResponseComplete', undefined, undefined, undefined);
  t.equal(plain.lineAscii, true, 'plain');
  const cases: Array<[string, (r: AuditRecord) => void, UserInfo, string]> = [
    ['a user name', () => undefined, { name: 'z\u00e9', groups: [] }, 'kubectl'],
    ['a user agent', () => undefined, { name: 'alice', groups: [] }, 'kubectl \u2713'],
    ['an annotation', (r) => r.annotate('authorization.k8s.io/reason', 'r\u00f4le'), { name: 'alice', groups: [] }, 'kubectl'],
    ['a status message', (r) => r.noteStatus({ status: 'Failure', message: 'nope \u{1f600}', reason: 'Forbidden', code: 403 }), { name: 'alice', groups: [] }, 'kubectl'],
  ];
  for (const [what, change, user, ua] of cases) {
    const r = new AuditRecord(d, 'id-2', req('/api/v1/namespaces/ns/configmaps/c', { 'user-agent': ua }), info(), user);
    change(r);
    r.line('ResponseComplete', undefined, undefined, undefined);
    t.equal(r.lineAscii, false, `${what} outside ASCII: encoded`);
  }
});

t.test('MicroTime text: RFC 3339 in UTC with six fraction digits, across milliseconds, seconds and days', async (t) => {
  const times = [0, 1, 999, 1000, 59_999, 60_000, 1_733_650_000_123, 1_733_650_000_999, 1_733_650_001_000, 1_733_650_000_123, 951_782_399_999, 951_782_400_000];
  for (const ms of times) t.equal(microTime(ms), `${new Date(ms).toISOString().slice(0, -1)}000Z`, String(ms));
  for (const ms of [1_733_650_000_123.75, 999.5]) t.equal(microTime(ms), `${new Date(ms).toISOString().slice(0, -1)}000Z`, `${ms}: a fractional time in whole milliseconds`);
});

t.test('RequestReceived is stamped with the time the request was received, as Kubernetes does', async (t) => {
  const d = policy('Metadata').evaluate({ user: { name: 'x', groups: [] }, verb: 'get', isResourceRequest: true, path: '/', apiGroup: '', namespace: 'ns', resource: 'configmaps', subresource: '', name: 'c' });
  const rec = new AuditRecord(d, 'id-3', req('/api/v1/namespaces/ns/configmaps/c'), info(), { name: 'alice', groups: [] });
  await new Promise((r) => setTimeout(r, 5));
  const line = JSON.parse(rec.line('RequestReceived', undefined, undefined, undefined)) as { requestReceivedTimestamp: string; stageTimestamp: string };
  t.equal(line.stageTimestamp, line.requestReceivedTimestamp, 'json line');
  const ev = rec.event('RequestReceived', undefined, undefined, undefined);
  t.equal(ev.stageTimestamp, ev.requestReceivedTimestamp, 'Event');
  rec.noteStatus({ code: 200 });
  const done = rec.event('ResponseComplete', undefined, undefined, undefined);
  t.not(done.stageTimestamp, done.requestReceivedTimestamp, 'ResponseComplete: the time it completed (5 ms later)');
});
