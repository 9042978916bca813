// The log backend: both formats (the legacy line exactly as Kubernetes' EventString), rotation
// by size keeping --audit-log-maxbackup backups and dropping those older than --audit-log-maxage
// by the time in their names, and batch mode (batches by size and by wait, a full buffer
// dropping and counting, nothing lost within it).
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { BufferedBackend } from '../../../src/daemons/apiserver/audit/batch.js';
import type { AuditEvent } from '../../../src/daemons/apiserver/audit/event.js';
import { formatLine, legacyLine, type AuditBackend } from '../../../src/daemons/apiserver/audit/format.js';
import { LogBackend, RotatingFile } from '../../../src/daemons/apiserver/audit/log-backend.js';
import { waitFor } from '../../helpers/wait-for.js';

const log = pino({ level: 'silent' });
const dir = await mkdtemp(join(tmpdir(), 'audit-log-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

function event(i: number, extra: Partial<AuditEvent> = {}): AuditEvent {
  return {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: 'Metadata', auditID: `id-${i}`, stage: 'ResponseComplete',
    requestURI: `/api/v1/namespaces/ns/configmaps/c${i}`, verb: 'get',
    user: { username: 'alice', groups: ['devs', 'system:authenticated'] }, sourceIPs: ['10.0.0.1', '127.0.0.1'], userAgent: 'kubectl/v1.33.0',
    objectRef: { resource: 'configmaps', namespace: 'ns', name: `c${i}`, apiVersion: 'v1' }, responseStatus: { metadata: {}, code: 200 },
    requestReceivedTimestamp: '2026-12-07T19:30:00.123400Z', stageTimestamp: '2026-12-07T19:30:00.125000Z', ...extra,
  };
}

t.test('the legacy line, as Kubernetes writes it', async (t) => {
  t.equal(legacyLine(event(1)),
    '2026-12-07T19:30:00.1234Z AUDIT: id="id-1" stage="ResponseComplete" ip="10.0.0.1" method="get" user="alice" groups="\\"devs\\",\\"system:authenticated\\"" as="<self>" asgroups="<lookup>" user-agent="kubectl/v1.33.0" namespace="ns" uri="/api/v1/namespaces/ns/configmaps/c1" response="200"');
  const { responseStatus: _r, sourceIPs: _s, objectRef: _o, ...bare } = event(2, { stage: 'RequestReceived', requestReceivedTimestamp: '2026-12-07T19:30:00.000000Z' });
  t.equal(legacyLine({ ...bare, user: { username: '' }, impersonatedUser: { username: 'bob', groups: ['g'] } }),
    '2026-12-07T19:30:00Z AUDIT: id="id-2" stage="RequestReceived" ip="<unknown>" method="get" user="<none>" groups="<none>" as="bob" asgroups="\\"g\\"" user-agent="kubectl/v1.33.0" namespace="<none>" uri="/api/v1/namespaces/ns/configmaps/c2" response="<deferred>"');
  t.same(JSON.parse(formatLine(event(3), 'json')), event(3), 'json: the event, one line');
  const full = event(4, {
    impersonatedUser: { username: 'bob', uid: 'u', groups: ['g'], extra: { 'a/b': ['c\n"d'] } }, annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': 'RBAC: "x"' },
    requestObject: { kind: 'ConfigMap', data: { k: 'v\u2028' } }, responseObject: { kind: 'Status', code: 404 },
    responseStatus: { metadata: {}, status: 'Failure', message: 'm', reason: 'NotFound', details: { name: 'x' }, code: 404 },
    requestURI: '/api/v1/x?labelSelector=a%3Db&q="quoted"\u0001',
  });
  // Kubernetes' field order (the events the server makes are built in it).
  const ORDER = ['kind', 'apiVersion', 'level', 'auditID', 'stage', 'requestURI', 'verb', 'user', 'impersonatedUser', 'sourceIPs', 'userAgent',
    'objectRef', 'responseStatus', 'requestObject', 'responseObject', 'requestReceivedTimestamp', 'stageTimestamp', 'annotations'] as const;
  const ordered = (e: AuditEvent): AuditEvent => Object.fromEntries(ORDER.filter((k) => k in e).map((k) => [k, e[k]])) as unknown as AuditEvent;
  for (const ev of [event(5), full, { ...full, userAgent: '', objectRef: { resource: 'pods', subresource: 'exec' } }].map(ordered)) {
    t.equal(formatLine(ev, 'json'), `${JSON.stringify(ev)}\n`, 'the same bytes as JSON.stringify');
    t.equal(formatLine(ev, 'json'), `${JSON.stringify(ev)}\n`, 'twice (the shared parts cached)');
  }
  t.match(formatLine(event(3), 'json'), /^\{"kind":"Event","apiVersion":"audit.k8s.io\/v1","level":"Metadata","auditID":"id-3","stage":"ResponseComplete",[^\n]*\}\n$/);
});

t.test('remembered JSON never mixes up two users or two annotation sets', async (t) => {
  const line = (user: AuditEvent['user'], annotations?: Record<string, string>) => JSON.parse(formatLine(event(1, { user, ...(annotations ? { annotations } : {}) }), 'json'));
  t.same(line({ username: 'a', groups: ['b', 'c'] }).user, { username: 'a', groups: ['b', 'c'] });
  t.same(line({ username: 'a\u0000b', groups: ['c'] }).user, { username: 'a\u0000b', groups: ['c'] }, 'not the user before');
  t.same(line({ username: 'a,b', groups: ['c'] }).user, { username: 'a,b', groups: ['c'] });
  t.same(line({ username: 'a', groups: ['b,c'] }).user, { username: 'a', groups: ['b,c'] });
  t.same(line({ username: 'a', groups: ['b'] }).user, { username: 'a', groups: ['b'] });
  t.same(line({ username: 'a\u0000b', groups: [] }).user, { username: 'a\u0000b', groups: [] });
  t.same(line({ username: 'a1:b', groups: [] }).user, { username: 'a1:b', groups: [] });
  t.same(line({ username: 'a', groups: ['1:b'] }).user, { username: 'a', groups: ['1:b'] });
  t.same(line({ username: 'a' }).user, { username: 'a' });
  t.same(line({ username: 'a', groups: [] }).user, { username: 'a', groups: [] });
  t.same(line({ username: 'a' }).user, { username: 'a' });
  t.same(line({ username: 'a' }, { 'x': '1:y' }).annotations, { 'x': '1:y' });
  t.same(line({ username: 'a' }, { 'x1:y': '' }).annotations, { 'x1:y': '' });
});

t.test('rotation by size with maxbackup; maxage by the time in the name', async (t) => {
  const path = join(dir, 'rot', 'audit.log');
  await import('node:fs/promises').then((f) => f.mkdir(join(dir, 'rot')));
  let now = Date.parse('2026-12-07T10:00:00.000Z');
  const file = new RotatingFile(path, { maxBytes: 2000, maxBackups: 2, maxAgeDays: 0 }, () => now);
  const backend = new LogBackend(file, 'json', log, () => t.fail('no write error'));
  const line = formatLine(event(0), 'json').length;
  const perFile = Math.floor(2000 / line);
  for (let i = 0; i < perFile * 4 + 1; i++) { backend.process([event(i)]); now += 1000; }
  const names = (await readdir(join(dir, 'rot'))).sort();
  t.equal(names.length, 3, `the file and two backups: ${names.join(' ')}`);
  t.match(names[0], /^audit-2026-12-07T10-\d\d-\d\d\.000\.log$/);
  t.equal(names[2], 'audit.log');
  for (const n of names) t.ok((await readFile(join(dir, 'rot', n))).length <= 2000, `${n} within maxsize`);
  const current = (await readFile(path, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l).auditID);
  t.same(current, [`id-${perFile * 4}`], 'the newest event in the current file');
  const newest = (await readFile(join(dir, 'rot', names[1]!), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l).auditID);
  t.equal(newest.length, perFile, 'a full backup');
  t.equal(newest.at(-1), `id-${perFile * 4 - 1}`, 'nothing lost between the files');
  await backend.shutdown();

  // maxage: a backup named 10 days ago goes at the next rotation, one from yesterday stays.
  const aged = join(dir, 'aged');
  await import('node:fs/promises').then((f) => f.mkdir(aged));
  await writeFile(join(aged, 'audit-2026-11-27T10-00-00.000.log'), 'old\n');
  await writeFile(join(aged, 'audit-2026-12-06T10-00-00.000.log'), 'recent\n');
  await writeFile(join(aged, 'audit-notatime.log'), 'kept: not a backup name\n');
  const f2 = new RotatingFile(join(aged, 'audit.log'), { maxBytes: 100, maxBackups: 0, maxAgeDays: 7 }, () => now);
  f2.write('x'.repeat(90) + '\n');
  f2.write('y'.repeat(90) + '\n');
  f2.close();
  const left = (await readdir(aged)).sort();
  t.same(left, ['audit-2026-12-06T10-00-00.000.log', `audit-${new Date(now).toISOString().replace(/:/g, '-').replace('Z', '')}.log`, 'audit-notatime.log', 'audit.log']);
});

/** A backend that records batches and can be held. */
function recorder(): AuditBackend & { batches: string[][]; hold: Promise<void> | undefined; release(): void } {
  let release = (): void => undefined;
  const r = {
    name: 'rec', batches: [] as string[][], hold: undefined as Promise<void> | undefined,
    release() { release(); r.hold = undefined; },
    async process(evs: AuditEvent[]) { r.batches.push(evs.map((e) => e.auditID)); if (r.hold) await r.hold; },
    async shutdown() { /* nothing */ },
    block() { r.hold = new Promise<void>((res) => { release = res; }); },
  };
  return r as unknown as ReturnType<typeof recorder> & { block(): void };
}

t.test('batch mode: by size, by wait, a full buffer drops and counts', async (t) => {
  const rec = recorder() as ReturnType<typeof recorder> & { block(): void };
  let dropped = 0;
  const b = new BufferedBackend(rec, { bufferSize: 10, maxBatchSize: 3, maxWaitMs: 50 }, log, (n) => { dropped += n; });
  b.process([event(1), event(2), event(3), event(4)]);
  await waitFor('two batches', () => rec.batches.length >= 2);
  t.same(rec.batches, [['id-1', 'id-2', 'id-3'], ['id-4']], 'a full batch at once, the rest after max-wait');

  // The backend stalls (a webhook retrying): events gather up to the buffer, then are dropped.
  rec.batches.length = 0;
  rec.block();
  b.process([event(10)]);
  await waitFor('the stalled batch', () => rec.batches.length === 1);
  for (let i = 11; i < 25; i++) b.process([event(i)]);
  t.equal(dropped, 4, '14 events for a buffer of 10: 4 dropped and counted');
  rec.release();
  await waitFor('the buffer written', () => rec.batches.flat().length === 11);
  t.same(rec.batches.flat(), ['id-10', ...Array.from({ length: 10 }, (_, i) => `id-${11 + i}`)], 'nothing within the buffer lost, in order');
  t.ok(rec.batches.every((x) => x.length <= 3));
  b.process([event(99)]);
  await b.shutdown();
  t.equal(rec.batches.flat().at(-1), 'id-99', 'shutdown writes what is buffered');
  b.process([event(100)]);
  t.equal(dropped, 5, 'after shutdown, events are dropped (counted), not written');
});

t.test('batch throttle: burst batches at once, then qps', async (t) => {
  const rec = recorder();
  const b = new BufferedBackend(rec, { bufferSize: 100, maxBatchSize: 1, maxWaitMs: 1000, throttle: { qps: 5, burst: 2 } }, log, () => undefined);
  const start = Date.now();
  b.process([event(1), event(2), event(3), event(4)]);
  await waitFor('two at once', () => rec.batches.length >= 2, 1000);
  await waitFor('all four', () => rec.batches.length === 4, 5000);
  t.ok(Date.now() - start >= 300, 'the last two waited for the throttle');
  await b.shutdown();
});

t.test('"-": events on standard output', async (t) => {
  const { StdoutSink } = await import('../../../src/daemons/apiserver/audit/log-backend.js');
  const write = process.stdout.write.bind(process.stdout);
  let out = '';
  process.stdout.write = ((chunk: string | Uint8Array) => { out += String(chunk); return true; }) as typeof process.stdout.write;
  try {
    new LogBackend(new StdoutSink(), 'legacy', log, () => undefined).process([event(7), event(8)]);
  } finally {
    process.stdout.write = write;
  }
  t.same(out.split('\n').filter(Boolean).map((l) => /id="([^"]+)"/.exec(l)?.[1]), ['id-7', 'id-8']);
});

t.test('blocking json lines: group commit, each caller waits for the write holding its line', async (t) => {
  const writes: string[] = [];
  const sink = { write(s: string) { writes.push(s); }, writeBytes(b: Buffer, n: number) { writes.push(b.toString('utf8', 0, n)); }, close() { /* nothing */ } };
  const backend = new LogBackend(sink, 'json', log, () => t.fail('no write error'), true);
  const line = (i: number): string => formatLine(event(i), 'json');
  const p1 = backend.processLine!(line(1), true);
  const p2 = backend.processLine!(line(2), true);
  t.ok(p1 instanceof Promise && p2 instanceof Promise, 'the caller gets a promise');
  t.equal(writes.length, 0, 'nothing written yet: the callers wait');
  await p1;
  t.same(writes, [line(1) + line(2)], 'both lines in one write, before the promises settled');
  await p2;
  const p3 = backend.processLine!(line(3), true);
  await backend.shutdown();
  t.equal(writes.at(-1), line(3), 'shutdown writes what is waiting');
  await p3;
  t.same(new LogBackend(sink, 'legacy', log, () => undefined, true).processLine, undefined, 'legacy lines need the Event');
});
