// The audit filter on its own, with a stub exchange: a handler's failure that is no API error
// is a Panic event with Kubernetes' message; a Status error is the ResponseComplete's
// responseStatus; None passes without a record; a long-running request that fails before its
// headers still reports ResponseStarted first; request bodies are kept only from Request level.
import { EventEmitter } from 'node:events';
import t from 'tap';
import { ApiError } from '../../../src/api/meta/status.js';
import { auditBodies, type AuditEvent } from '../../../src/daemons/apiserver/audit/event.js';
import { AuditPolicy } from '../../../src/daemons/apiserver/audit/policy.js';
import type { RequestContext } from '../../../src/daemons/apiserver/context.js';
import { audit } from '../../../src/daemons/apiserver/filters/audit.js';
import type { Exchange } from '../../../src/daemons/apiserver/filters/filter.js';

const policy = AuditPolicy.parse(`
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: [/healthz]
- level: Request
  namespaces: [req]
- level: Metadata
`);

function exchange(path: string, opts: { longRunning?: boolean; namespace?: string; verb?: string } = {}): Exchange & { res: Any } {
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200, headersSent: false, writableEnded: false, headers: {} as Record<string, unknown>,
    getHeader(n: string) { return this.headers[n]; }, setHeader(n: string, v: unknown) { this.headers[n] = v; },
    writeHead(code: number) { this.statusCode = code; this.headersSent = true; return this; },
    flushHeaders() { this.headersSent = true; },
    write() { this.headersSent = true; return true; },
    end() { this.headersSent = true; this.writableEnded = true; return this; },
  });
  const isResource = path.startsWith('/api/');
  const ctx = {
    info: {
      isResourceRequest: isResource, path, verb: opts.verb ?? 'get', apiPrefix: isResource ? 'api' : '', apiGroup: '', apiVersion: isResource ? 'v1' : '',
      namespace: opts.namespace ?? '', resource: isResource ? 'configmaps' : '', subresource: '', name: '', parts: [],
    },
    user: { name: 'alice', groups: ['system:authenticated'] }, query: new URLSearchParams(), requestId: 'id-1',
    isLongRunning: !!opts.longRunning, signal: new AbortController().signal, log: undefined as never,
  } as RequestContext;
  return {
    req: { headers: { 'user-agent': 'test/1.0' }, method: 'GET', url: path, socket: { remoteAddress: '::ffff:10.1.2.3' } } as Any,
    url: undefined as never, ctx, abort: { abort() { /* stub */ } }, res: res as Any,
    fail() { /* stub */ }, started: () => res.headersSent, handOver() { /* stub */ }, onClose() { /* stub */ },
  };
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

function sink() {
  const events: AuditEvent[] = [];
  return { events, s: { policy, blocking: false, emit(evs: AuditEvent[]) { events.push(...evs); } } };
}

t.test('a failure that is no API error is a Panic', async (t) => {
  const { events, s } = sink();
  const x = exchange('/api/v1/configmaps');
  await t.rejects(audit(s).run(x, async () => { throw new TypeError('boom'); }), /boom/);
  t.same(events.map((e) => e.stage), ['RequestReceived', 'Panic']);
  t.same(events[1]!.responseStatus, { metadata: {}, status: 'Failure', message: "APIServer panic'd: boom", reason: 'InternalError', code: 500 });
  t.same(events[0]!.sourceIPs, ['10.1.2.3'], 'the peer, without the IPv4-mapped prefix');
  t.equal(events[0]!.userAgent, 'test/1.0');
});

t.test('a Status error becomes the responseStatus', async (t) => {
  const { events, s } = sink();
  const x = exchange('/api/v1/configmaps');
  await t.rejects(audit(s).run(x, async () => { throw new ApiError(404, 'NotFound', 'configmaps "x" not found', { name: 'x', kind: 'configmaps' }); }));
  t.same(events[1]!.responseStatus, { metadata: {}, status: 'Failure', message: 'configmaps "x" not found', reason: 'NotFound', details: { name: 'x', kind: 'configmaps' }, code: 404 });
  t.notOk('requestObject' in events[1]! || 'responseObject' in events[1]!, 'Metadata carries no objects');
});

t.test('None: no record, no event', async (t) => {
  const { events, s } = sink();
  const x = exchange('/healthz');
  await audit(s).run(x, async () => { x.res.end(); });
  t.equal(events.length, 0);
  t.equal(x.ctx.audit, undefined);
  t.notOk(auditBodies.has(x.req), 'no body kept');
});

t.test('a long-running request failing before its headers: ResponseStarted, then ResponseComplete', async (t) => {
  const { events, s } = sink();
  const x = exchange('/api/v1/configmaps', { longRunning: true, verb: 'watch' });
  await t.rejects(audit(s).run(x, async () => { throw new ApiError(410, 'Expired', 'too old'); }));
  t.same(events.map((e) => `${e.stage} ${e.responseStatus?.code ?? '-'}`), ['RequestReceived -', 'ResponseStarted 410', 'ResponseComplete 410']);
});

t.test('a long-running request: ResponseStarted when its headers go, ResponseComplete when it ends', async (t) => {
  const { events, s } = sink();
  const x = exchange('/api/v1/configmaps', { longRunning: true, verb: 'watch' });
  await audit(s).run(x, async () => {
    x.res.write('{}');
    t.same(events.map((e) => e.stage), ['RequestReceived', 'ResponseStarted'], 'started on the first write');
    x.res.end();
  });
  t.same(events.map((e) => e.stage), ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
});

t.test('bodies: kept at Request level only', async (t) => {
  const { events, s } = sink();
  const meta = exchange('/api/v1/namespaces/m/configmaps', { namespace: 'm', verb: 'create' });
  await audit(s).run(meta, async () => {
    t.notOk(auditBodies.has(meta.req), 'Metadata: readBody hands nothing over');
    meta.ctx.audit?.noteObject({ name: 'from-body', namespace: 'm' });
    meta.res.statusCode = 201;
    meta.res.end();
  });
  t.same(events.at(-1)!.objectRef, { resource: 'configmaps', namespace: 'm', name: 'from-body', apiVersion: 'v1' }, "a create's name from its object");
  const req = exchange('/api/v1/namespaces/req/configmaps', { namespace: 'req', verb: 'create' });
  await audit(s).run(req, async () => {
    t.equal(auditBodies.get(req.req), req.ctx.audit, 'Request: readBody hands the body over');
    req.ctx.audit!.requestBody = Buffer.from('{"kind":"ConfigMap","metadata":{"managedFields":[]}}');
    req.res.end();
  });
  t.same(events.at(-1)!.requestObject, { kind: 'ConfigMap', metadata: { managedFields: [] } });
  t.notOk('responseObject' in events.at(-1)!, 'no response object below RequestResponse');
});

t.test('blocking: the response ends only once ResponseComplete is written', async (t) => {
  const events: string[] = [];
  let release = (): void => undefined;
  const s = {
    policy, blocking: true,
    emit(evs: AuditEvent[]): void | Promise<void> {
      events.push(evs[0]!.stage);
      if (evs[0]!.stage === 'ResponseComplete') return new Promise<void>((r) => { release = () => { events.push('written'); r(); }; });
    },
  };
  const x = exchange('/api/v1/configmaps');
  let ended = false;
  const realEnd = x.res.end;
  x.res.end = function (this: unknown) { ended = true; return realEnd.call(x.res); };
  const done = audit(s).run(x, async () => { x.res.end(); });
  await new Promise((r) => setImmediate(r));
  t.same(events, ['RequestReceived', 'ResponseComplete']);
  t.notOk(ended, 'the end is held while the event is being written');
  release();
  await done;
  t.ok(ended, 'then the response ends');
  t.same(events, ['RequestReceived', 'ResponseComplete', 'written']);
});

t.test('blocking: an answer from outside the handler (a timeout) is not held', async (t) => {
  const s = { policy, blocking: true, emit(): void { /* written at once */ } };
  const x = exchange('/api/v1/configmaps');
  let ended = false;
  const realEnd = x.res.end;
  x.res.end = function (this: unknown) { ended = true; return realEnd.call(x.res); };
  (x as unknown as { fail: () => void }).fail = () => { x.res.statusCode = 504; x.res.end(); };
  void audit(s).run(x, () => new Promise<void>(() => { /* a handler that never ends */ }));
  await new Promise((r) => setImmediate(r));
  x.fail(undefined as never);
  t.ok(ended, 'the 504 goes out at once');
});
