/**
 * Audit (Kubernetes' WithAudit): after authentication, the policy gives each request a level.
 * None (and no policy) costs one rule walk; otherwise the request gets an AuditRecord on its
 * context and events go to the backends: RequestReceived now, ResponseStarted when a
 * long-running request (watch, exec ...) sends its headers, ResponseComplete when the answer
 * is done (or Panic for a failure that is no API error). Bodies are kept only at the levels
 * that log them: Request (the request body, handed over by readBody) and RequestResponse (the
 * response's bytes too, for requests that are not long-running).
 *
 * Cost: the common request (answered at once, batch mode, Metadata or Request level) takes a
 * lean path, with no async function, closure per stage or wrapped response; the server's sink
 * has the json log written straight from the record (AuditRecord.line) rather than from Event
 * objects (bench/apiserver-audit.bench.ts measures what audit costs a GET).
 */
import { gunzipSync } from 'node:zlib';
import type { Duplex } from 'node:stream';
import { isApiError } from '../../../api/meta/status.js';
import { auditBodies, auditVerb, AuditRecord, statusOfCode, type AuditEvent, type ResponseStatus } from '../audit/event.js';
import type { AuditDecision, AuditPolicy, Stage } from '../audit/policy.js';
import type { ApiRequest, ApiResponse, UserInfo } from '../context.js';
import type { Exchange, Filter } from './filter.js';

export interface AuditSink {
  readonly policy: AuditPolicy;
  /** Hands events to every backend; a promise when a blocking backend is still writing. */
  emit(events: AuditEvent[]): void | Promise<void>;
  /**
   * One stage of a record to every backend (the server's sink): backends that write json lines
   * get the record's line, built without an Event object. Without it, `emit` gets Events.
   */
  emitStage?(rec: AuditRecord, stage: Stage, impersonated: UserInfo | undefined, reqType: string | undefined, resType: string | undefined): void | Promise<void>;
  /** Some backend is blocking: a response ends only once its ResponseComplete is written. */
  readonly blocking: boolean;
}

export function audit(sink?: AuditSink): Filter {
  return {
    name: 'audit',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      if (!sink) return next();
      const { ctx } = x;
      const i = ctx.info;
      const d = sink.policy.evaluate({
        user: ctx.user, verb: auditVerb(i, x.req.method), isResourceRequest: i.isResourceRequest, path: i.path,
        apiGroup: i.apiGroup, namespace: i.namespace, resource: i.resource, subresource: i.subresource, name: i.name,
      });
      if (d.level === 'None') return next();
      return withAudit(sink, d, x, next);
    },
  };
}

/** Hands one stage to the sink (nothing when the policy omits the stage). */
function emitStage(sink: AuditSink, rec: AuditRecord, x: Exchange, stage: Stage): void | Promise<void> {
  if (rec.decision.omitStages.has(stage)) return;
  const ctx = x.ctx;
  const impersonated = ctx.originalUser ? ctx.user : undefined;
  // The content types matter only where bodies are logged.
  let reqType: string | undefined;
  let resType: string | undefined;
  if (rec.wantsRequestBody) {
    reqType = x.req.headers['content-type'];
    const t = x.res?.getHeader('content-type');
    if (typeof t === 'string') resType = t;
  }
  if (sink.emitStage) return sink.emitStage(rec, stage, impersonated, reqType, resType);
  return sink.emit([rec.event(stage, impersonated, reqType, resType)]);
}

function panicStatus(e: unknown): ResponseStatus {
  return { metadata: {}, status: 'Failure', message: `APIServer panic'd: ${(e as Error)?.message ?? String(e)}`, reason: 'InternalError', code: 500 } as ResponseStatus;
}

/**
 * Not an async function: the common request (answered at once, no long-running stream, no
 * upgrade, no blocking backend, no response body kept) pays two promise reactions, no closures
 * and no wrapped response; everything else takes `fullAudit`.
 */
function withAudit(sink: AuditSink, d: AuditDecision, x: Exchange, next: () => Promise<void>): Promise<void> {
  const { ctx, req } = x;
  const rec = new AuditRecord(d, ctx.requestId, req, ctx.info, ctx.user);
  ctx.audit = rec;
  if (rec.wantsRequestBody) auditBodies.set(req, rec);
  const received = emitStage(sink, rec, x, 'RequestReceived');
  if (received) return received.then(() => afterReceived(sink, rec, x, next));
  return afterReceived(sink, rec, x, next);
}

function afterReceived(sink: AuditSink, rec: AuditRecord, x: Exchange, next: () => Promise<void>): Promise<void> {
  if (!x.res || x.ctx.isLongRunning || x.upgrade || sink.blocking || rec.wantsResponseBody) return fullAudit(sink, rec, x, next);
  let p: Promise<void>;
  try { p = next(); } catch (e) { p = Promise.reject(e); }
  return p.then(() => plainComplete(sink, rec, x), (e: unknown) => plainFailed(sink, rec, x, e));
}

function plainComplete(sink: AuditSink, rec: AuditRecord, x: Exchange): void | Promise<void> {
  const res = x.res!;
  const complete = (): void | Promise<void> => {
    rec.responseStatus ??= statusOfCode(res.statusCode);
    return emitStage(sink, rec, x, 'ResponseComplete');
  };
  // A handler that returned before its answer ended (a stream): complete when it closes.
  if (!res.writableEnded) { x.onClose(() => { void complete(); }); return; }
  return complete();
}

function plainFailed(sink: AuditSink, rec: AuditRecord, x: Exchange, e: unknown): Promise<never> {
  let p: void | Promise<void>;
  if (isApiError(e)) {
    rec.noteStatus(e.status);
    p = emitStage(sink, rec, x, 'ResponseComplete');
  } else {
    rec.responseStatus = panicStatus(e);
    p = emitStage(sink, rec, x, 'Panic');
  }
  return p ? p.then(() => { throw e; }) : Promise.reject(e);
}

async function fullAudit(sink: AuditSink, rec: AuditRecord, x: Exchange, next: () => Promise<void>): Promise<void> {
  const { ctx, res } = x;
  const emit = (stage: Stage): void | Promise<void> => emitStage(sink, rec, x, stage);
  // Blocking backends: the response's end waits until ResponseComplete is written.
  const hold = res && sink.blocking ? holdEnd(res) : undefined;
  if (hold) {
    // An answer from outside the handler (the request timeout's 504) is never held.
    const fail = x.fail;
    (x as { fail: Exchange['fail'] }).fail = (err) => { hold.restore(); fail.call(x, err); };
  }
  // A long-running request reports its start once: when its headers go out, or with its end.
  let startReported = false;
  const reportStart = (): void | Promise<void> => {
    if (startReported || !ctx.isLongRunning) return;
    startReported = true;
    return emit('ResponseStarted');
  };
  if (res && ctx.isLongRunning) {
    onHeadersSent(res, () => {
      rec.responseStatus ??= statusOfCode(res.statusCode);
      void reportStart();
    });
  } else if (res && rec.wantsResponseBody) keepResponseBody(res, rec);
  try {
    await next();
  } catch (e) {
    hold?.restore();
    if (isApiError(e)) {
      rec.noteStatus(e.status);
      // The Status is the response object (written by panic recovery once audit is done).
      if (rec.wantsResponseBody && !(res?.headersSent)) rec.responseBody = [Buffer.from(JSON.stringify(e.status))];
      const s = reportStart();
      if (s) await s;
      const p = emit('ResponseComplete');
      if (p) await p;
    } else {
      rec.responseStatus = panicStatus(e);
      const p = emit('Panic');
      if (p) await p;
    }
    throw e;
  }
  if (x.upgrade) {
    if (x.started()) watchUpgrade(x.upgrade.socket, rec, emit);
    else {
      rec.responseStatus ??= statusOfCode(101);
      await emit('ResponseComplete');
    }
    return;
  }
  let completed = false;
  const complete = (): void | Promise<void> => {
    if (completed) return;
    completed = true;
    rec.responseStatus ??= statusOfCode(res!.statusCode);
    const s = reportStart();
    return s ? s.then(() => emit('ResponseComplete')) : emit('ResponseComplete');
  };
  if (hold) {
    // The handler ended the response (held), or will later (a stream): audit, then end it.
    if (hold.ended()) {
      await complete();
      hold.release();
    } else {
      hold.onEnd(() => { void Promise.resolve(complete()).finally(() => hold.release()); });
      x.onClose(() => { void complete(); });
    }
    return;
  }
  if (res && !res.writableEnded) {
    x.onClose(() => { void complete(); });
    return;
  }
  const p = complete();
  if (p) await p;
}

/**
 * Failed authentication (Kubernetes' WithFailedAuthenticationAudit): the authentication filter
 * calls this before its 401; one ResponseStarted event with no user and the methods tried,
 * when the policy gives the user-less request a level.
 */
export function failedAuthenticationAudit(sink: AuditSink): (x: Exchange) => void | Promise<void> {
  return (x) => auditFailedAuthentication(sink, x);
}

const NO_USER = Object.freeze({ name: '', groups: Object.freeze([]) as unknown as string[] });

/** What credentials the refused request brought, in Kubernetes' words. */
export function authMethodsMessage(req: ApiRequest): string {
  const methods: string[] = [];
  const auth = String(req.headers['authorization'] ?? '').trim();
  const scheme = auth.split(' ')[0]!.toLowerCase();
  if (scheme === 'basic') methods.push('basic');
  if (scheme === 'bearer' && auth.split(' ').length > 1) methods.push('bearer');
  const sock = req.socket as { getPeerCertificate?: () => { raw?: Buffer } } | undefined;
  if (typeof sock?.getPeerCertificate === 'function' && sock.getPeerCertificate()?.raw) methods.push('x509');
  return methods.length ? `Authentication failed, attempted: ${methods.join(', ')}` : 'Authentication failed, no credentials provided';
}

function auditFailedAuthentication(sink: AuditSink, x: Exchange): void | Promise<void> {
  const i = x.ctx.info;
  const d = sink.policy.evaluate({
    user: NO_USER, verb: auditVerb(i, x.req.method), isResourceRequest: i.isResourceRequest, path: i.path,
    apiGroup: i.apiGroup, namespace: i.namespace, resource: i.resource, subresource: i.subresource, name: i.name,
  });
  if (d.level === 'None' || d.omitStages.has('ResponseStarted')) return;
  const rec = new AuditRecord(d, x.ctx.requestId, x.req, i, NO_USER);
  rec.noteStatus({ message: authMethodsMessage(x.req), code: 401 });
  if (sink.emitStage) return sink.emitStage(rec, 'ResponseStarted', undefined, undefined, undefined);
  return sink.emit([rec.event('ResponseStarted', undefined, undefined, undefined)]);
}

/** Holds a response's end() until released (blocking audit backends). */
function holdEnd(res: ApiResponse): { ended(): boolean; onEnd(fn: () => void): void; release(): void; restore(): void } {
  const r = res as unknown as Record<string, (...a: unknown[]) => unknown>;
  const realEnd = r.end!;
  let args: unknown[] | undefined;
  let late: (() => void) | undefined;
  r.end = function (this: unknown, ...a: unknown[]): unknown {
    if (args) return res;
    args = a;
    late?.();
    return res;
  };
  const restore = (): void => { r.end = realEnd; };
  return {
    ended: () => args !== undefined,
    onEnd: (fn) => { late = fn; },
    restore,
    release: () => {
      restore();
      if (args && !res.writableEnded) realEnd.apply(res, args);
    },
  };
}

/** Calls `fn` once, right after the response's headers go out (long-running requests only: four wrapped methods). */
function onHeadersSent(res: ApiResponse, fn: () => void): void {
  const r = res as unknown as Record<string, (...a: unknown[]) => unknown>;
  let fired = false;
  for (const m of ['writeHead', 'flushHeaders', 'write', 'end']) {
    const orig = r[m]!;
    r[m] = function (this: unknown, ...args: unknown[]): unknown {
      const out = orig.apply(res, args);
      if (!fired && res.headersSent) { fired = true; fn(); }
      return out;
    };
  }
}

/** Collects the response bytes (RequestResponse level only). */
function keepResponseBody(res: ApiResponse, rec: AuditRecord): void {
  const chunks: Buffer[] = [];
  rec.responseBody = chunks;
  const r = res as unknown as Record<string, (...a: unknown[]) => unknown>;
  const keep = (c: unknown): void => {
    if (typeof c === 'string') chunks.push(Buffer.from(c));
    else if (c instanceof Uint8Array) chunks.push(Buffer.from(c));
  };
  const write = r.write!;
  const end = r.end!;
  r.write = function (this: unknown, ...args: unknown[]): unknown { keep(args[0]); return write.apply(res, args); };
  r.end = function (this: unknown, ...args: unknown[]): unknown {
    if (typeof args[0] !== 'function') keep(args[0]);
    if (String(res.getHeader('content-encoding') ?? '') === 'gzip' && chunks.length) {
      try { const plain = gunzipSync(Buffer.concat(chunks)); chunks.length = 0; chunks.push(plain); } catch { chunks.length = 0; }
    }
    return end.apply(res, args);
  };
}

/**
 * An upgrade (exec, attach, port-forward) once a handler owns the socket: the status line it
 * writes first gives ResponseStarted's code (101 when switching protocols), the socket's close
 * ResponseComplete.
 */
function watchUpgrade(socket: Duplex, rec: AuditRecord, emit: (s: Stage) => void | Promise<void>): void {
  let seen = false;
  const write = socket.write;
  const end = socket.end;
  const started = (chunk: unknown): void => {
    if (seen) return;
    seen = true;
    socket.write = write;
    socket.end = end;
    const head = typeof chunk === 'string' ? chunk.slice(0, 16) : chunk instanceof Uint8Array ? Buffer.from(chunk.subarray(0, 16)).toString('latin1') : '';
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
    rec.responseStatus = statusOfCode(m ? Number(m[1]) : 101);
    void emit('ResponseStarted');
  };
  socket.write = function (this: Duplex, ...args: unknown[]): boolean {
    started(args[0]);
    return (write as (...a: unknown[]) => boolean).apply(socket, args);
  } as Duplex['write'];
  socket.end = function (this: Duplex, ...args: unknown[]): Duplex {
    if (typeof args[0] !== 'function') started(args[0]);
    return (end as (...a: unknown[]) => Duplex).apply(socket, args);
  } as Duplex['end'];
  const finish = (): void => {
    started(undefined);
    void emit('ResponseComplete');
  };
  if (socket.destroyed) finish(); else socket.once('close', finish);
}
