/**
 * Audit from the command line: `--audit-policy-file` (required for any event, as Kubernetes),
 * the log backend (`--audit-log-*`) and the webhook backend (`--audit-webhook-*`), each blocking
 * or batch. Option errors are StartupErrors naming the option. The sink counts events in
 * apiserver_audit_event_total and failures in apiserver_audit_error_total{plugin}.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { loadCoreconfig } from '../../../client/coreconfig.js';
import type { AuditSink } from '../filters/audit.js';
import { StartupError } from '../serving-options.js';
import { BufferedBackend, type BatchOptions } from './batch.js';
import type { AuditEvent } from './event.js';
import type { AuditBackend, LogFormat } from './format.js';
import { LogBackend, RotatingFile, StdoutSink, type LineSink } from './log-backend.js';
import { AuditPolicy, PolicyError } from './policy.js';
import { WebhookBackend } from './webhook-backend.js';

const MB = 1024 * 1024;
const DEFAULT_MAX_MB = 100;

export interface AuditConfig {
  auditPolicyFile?: string | undefined;
  auditLogPath?: string | undefined;
  auditLogFormat: string;
  auditLogMode: string;
  auditLogMaxsize?: number | undefined;
  auditLogMaxbackup?: number | undefined;
  auditLogMaxage?: number | undefined;
  auditLogBatchBufferSize: number;
  auditLogBatchMaxSize: number;
  auditLogBatchMaxWait: number;
  auditLogBatchThrottleEnable?: boolean | undefined;
  auditLogBatchThrottleQps: number;
  auditLogBatchThrottleBurst: number;
  auditWebhookConfigFile?: string | undefined;
  auditWebhookMode: string;
  auditWebhookInitialBackoff: number;
  auditWebhookBatchBufferSize: number;
  auditWebhookBatchMaxSize: number;
  auditWebhookBatchMaxWait: number;
  auditWebhookBatchThrottleEnable?: boolean | undefined;
  auditWebhookBatchThrottleQps: number;
  auditWebhookBatchThrottleBurst: number;
}

export interface AuditSetup extends AuditSink {
  /** Writes out buffered events and closes the backends. */
  shutdown(): Promise<void>;
}

export function loadAuditPolicy(file: string): AuditPolicy {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (e) { throw new StartupError('--audit-policy-file', `cannot read ${file}: ${(e as Error).message}`); }
  try { return AuditPolicy.parse(text); } catch (e) {
    if (e instanceof PolicyError) throw new StartupError('--audit-policy-file', `${file}: ${e.message}`);
    throw e;
  }
}

function nonNegative(v: number | undefined, option: string): number {
  if (v === undefined) return 0;
  if (!Number.isInteger(v) || v < 0) throw new StartupError(option, `must be 0 or more, got ${v}`);
  return v;
}

function batchOptions(prefix: 'log' | 'webhook', c: AuditConfig): BatchOptions {
  const p = prefix === 'log'
    ? { size: c.auditLogBatchBufferSize, max: c.auditLogBatchMaxSize, wait: c.auditLogBatchMaxWait, on: c.auditLogBatchThrottleEnable ?? false, qps: c.auditLogBatchThrottleQps, burst: c.auditLogBatchThrottleBurst }
    : { size: c.auditWebhookBatchBufferSize, max: c.auditWebhookBatchMaxSize, wait: c.auditWebhookBatchMaxWait, on: c.auditWebhookBatchThrottleEnable ?? true, qps: c.auditWebhookBatchThrottleQps, burst: c.auditWebhookBatchThrottleBurst };
  const opt = (name: string): string => `--audit-${prefix}-batch-${name}`;
  if (!(p.size > 0)) throw new StartupError(opt('buffer-size'), `must be greater than 0, got ${p.size}`);
  if (!(p.max > 0)) throw new StartupError(opt('max-size'), `must be greater than 0, got ${p.max}`);
  if (!(p.wait > 0)) throw new StartupError(opt('max-wait'), 'must be greater than 0');
  const out: BatchOptions = { bufferSize: p.size, maxBatchSize: p.max, maxWaitMs: p.wait };
  if (p.on) {
    if (!(p.qps > 0)) throw new StartupError(opt('throttle-qps'), `must be greater than 0, got ${p.qps}`);
    if (!(p.burst > 0)) throw new StartupError(opt('throttle-burst'), `must be greater than 0, got ${p.burst}`);
    out.throttle = { qps: p.qps, burst: p.burst };
  }
  return out;
}

function mode(v: string, option: string): 'blocking' | 'batch' {
  if (v !== 'blocking' && v !== 'batch') throw new StartupError(option, `unknown mode "${v}" (want blocking or batch)`);
  return v;
}

/** The audit sink, or undefined when no policy file or no backend is configured. */
export async function setupAudit(c: AuditConfig, log: Logger, registry: Registry): Promise<AuditSetup | undefined> {
  const wantLog = !!c.auditLogPath;
  const wantWebhook = !!c.auditWebhookConfigFile;
  const logMode = mode(c.auditLogMode, '--audit-log-mode');
  const webhookMode = mode(c.auditWebhookMode, '--audit-webhook-mode');
  if (c.auditLogFormat !== 'json' && c.auditLogFormat !== 'legacy') throw new StartupError('--audit-log-format', `unknown format "${c.auditLogFormat}" (want json or legacy)`);
  const rotation = {
    // 0 is lumberjack's default size, as in Kubernetes: 100 MB.
    maxBytes: (nonNegative(c.auditLogMaxsize, '--audit-log-maxsize') || DEFAULT_MAX_MB) * MB,
    maxBackups: nonNegative(c.auditLogMaxbackup, '--audit-log-maxbackup'),
    maxAgeDays: nonNegative(c.auditLogMaxage, '--audit-log-maxage'),
  };
  const logBatch = wantLog && logMode === 'batch' ? batchOptions('log', c) : undefined;
  const webhookBatch = wantWebhook && webhookMode === 'batch' ? batchOptions('webhook', c) : undefined;
  if (!c.auditPolicyFile) {
    if (wantLog || wantWebhook) log.warn('no audit policy file (--audit-policy-file): no audit events will be recorded');
    return undefined;
  }
  const policy = loadAuditPolicy(c.auditPolicyFile);
  if (!wantLog && !wantWebhook) return undefined;
  if (wantWebhook && !(c.auditWebhookInitialBackoff > 0)) throw new StartupError('--audit-webhook-initial-backoff', 'must be greater than 0');

  // Counted in a plain number and handed to the metric when it is read (a Counter's inc on every event costs more than the event's line).
  let uncounted = 0;
  const events = new Counter({
    name: 'apiserver_audit_event_total', help: 'Counter of audit events generated and sent to the audit backend.', registers: [registry],
    collect() { if (uncounted) { this.inc(uncounted); uncounted = 0; } },
  });
  const errorsTotal = new Counter({ name: 'apiserver_audit_error_total', help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.', labelNames: ['plugin'], registers: [registry] });
  const alog = log.child({ component: 'audit' });
  const backends: AuditBackend[] = [];
  if (wantLog) {
    let sink: LineSink;
    if (c.auditLogPath === '-') sink = new StdoutSink();
    else {
      try {
        mkdirSync(dirname(c.auditLogPath!), { recursive: true, mode: 0o700 });
        sink = new RotatingFile(c.auditLogPath!, rotation);
      } catch (e) {
        throw new StartupError('--audit-log-path', `cannot open ${c.auditLogPath}: ${(e as Error).message}`);
      }
    }
    const b = new LogBackend(sink, c.auditLogFormat as LogFormat, alog, (n) => errorsTotal.inc({ plugin: 'log' }, n), !logBatch);
    backends.push(logBatch ? new BufferedBackend(b, logBatch, alog, (n) => errorsTotal.inc({ plugin: 'buffered' }, n)) : b);
  }
  if (wantWebhook) {
    let conn;
    try {
      conn = await loadCoreconfig({ path: c.auditWebhookConfigFile! });
    } catch (e) {
      throw new StartupError('--audit-webhook-config-file', (e as Error).message);
    }
    const b = new WebhookBackend(conn, c.auditWebhookInitialBackoff, alog, (n) => errorsTotal.inc({ plugin: 'webhook' }, n));
    backends.push(webhookBatch ? new BufferedBackend(b, webhookBatch, alog, (n) => errorsTotal.inc({ plugin: 'buffered' }, n)) : b);
  }
  return {
    policy,
    blocking: (wantLog && logMode === 'blocking') || (wantWebhook && webhookMode === 'blocking'),
    emit(evs: AuditEvent[]): void | Promise<void> {
      uncounted += evs.length;
      let pending: Promise<void>[] | undefined;
      for (const b of backends) {
        const p = b.process(evs);
        if (p) (pending ??= []).push(p);
      }
      if (pending) return Promise.all(pending).then(() => undefined);
    },
    emitStage(rec, stage, impersonated, reqType, resType): void | Promise<void> {
      uncounted++;
      // The json log gets the line written straight from the record; other backends the Event.
      let line: string | undefined;
      let ev: AuditEvent | undefined;
      let pending: Promise<void>[] | undefined;
      for (const b of backends) {
        const p = b.processLine ? b.processLine(line ??= rec.line(stage, impersonated, reqType, resType), rec.lineAscii) : b.process([ev ??= rec.event(stage, impersonated, reqType, resType)]);
        if (p) (pending ??= []).push(p);
      }
      if (pending) return pending.length === 1 ? pending[0] : Promise.all(pending).then(() => undefined);
    },
    async shutdown(): Promise<void> {
      for (const b of backends) {
        try { await b.shutdown(); } catch (e) { alog.warn({ err: (e as Error).message }, 'audit backend shutdown failed'); }
      }
    },
  };
}
