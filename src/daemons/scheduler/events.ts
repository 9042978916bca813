/**
 * Scheduler events, written as core/v1 Events about the pod:
 *   Normal  Scheduled         "Successfully assigned <ns>/<pod> to <node>"   (action Binding)
 *   Warning FailedScheduling  the fit summary or "Binding rejected: ..."     (action Scheduling)
 * with source.component and reportingComponent set to the scheduler name.
 *
 * A repeat of the same reason and message for the same pod increments the existing event's
 * count (a merge patch) instead of creating another, as the Kubernetes recorder does.
 *
 * Contract: `record` never throws and never blocks the caller: events wait in a bounded
 * backlog (`maxQueued`; beyond it they are dropped and counted, as Kubernetes' broadcaster
 * drops) and `concurrency` background writers send them, so event writes never crowd out
 * bindings. `drain` waits until the backlog is written. Failures are logged at debug level.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import type { Pod } from './types.js';

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
  record(pod: Pod, type: EventType, reason: string, action: string, message: string): void;
}

export interface EventRecorderOptions {
  client: RestClient;
  component: string;
  log?: Logger;
  /** Events waiting to be written before new ones are dropped. @default 1000 */
  maxQueued?: number;
  /** Writes at once. @default 8 */
  concurrency?: number;
  /** Remembered (pod, reason, message) series for counting repeats. */
  maxSeries?: number;
  now?: () => Date;
}

interface Series { namespace: string; name: string; count: number }

function timestamp(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

interface Pending { pod: Pod; type: EventType; reason: string; action: string; message: string }

export class EventRecorder implements EventSink {
  private readonly backlog: Pending[] = [];
  private readonly writers = new Set<Promise<void>>();
  private readonly series = new Map<string, Series>();
  private readonly log: Logger;
  private readonly instance: string;
  dropped = 0;
  written = 0;

  constructor(private readonly o: EventRecorderOptions) {
    this.log = o.log ?? pino({ level: 'silent' });
    this.instance = `${o.component}-${hostname()}`;
  }

  record(pod: Pod, type: EventType, reason: string, action: string, message: string): void {
    if (this.backlog.length >= (this.o.maxQueued ?? 1000)) { this.dropped++; return; }
    this.backlog.push({ pod, type, reason, action, message });
    if (this.writers.size < (this.o.concurrency ?? 8)) {
      const w = this.writer().finally(() => { this.writers.delete(w); });
      this.writers.add(w);
    }
  }

  /** Writes backlog entries until none is left; never rejects. */
  private async writer(): Promise<void> {
    for (let e = this.backlog.shift(); e; e = this.backlog.shift()) {
      try {
        await this.write(e.pod, e.type, e.reason, e.action, e.message);
      } catch (err) {
        this.log.debug({ pod: `${e.pod.metadata?.namespace}/${e.pod.metadata?.name}`, reason: e.reason, err: (err as Error).message }, 'cannot write event');
      }
    }
  }

  private async write(pod: Pod, type: EventType, reason: string, action: string, message: string): Promise<void> {
    const m = pod.metadata ?? {};
    const namespace = m.namespace ?? 'default';
    const now = timestamp((this.o.now ?? (() => new Date()))());
    const ref = { group: '', version: 'v1', resource: 'events', namespace };
    const seriesKey = `${m.uid ?? `${namespace}/${m.name}`}\u0000${reason}\u0000${message}`;
    const known = this.series.get(seriesKey);
    if (known) {
      known.count++;
      try {
        await this.o.client.patch(ref, known.name, 'merge', { count: known.count, lastTimestamp: now });
        this.written++;
        return;
      } catch {
        this.series.delete(seriesKey); // expired or deleted: start a new event
      }
    }
    const event: KubeObject = {
      apiVersion: 'v1', kind: 'Event',
      metadata: { name: `${m.name ?? 'pod'}.${randomBytes(8).toString('hex')}`, namespace },
      involvedObject: {
        kind: 'Pod', apiVersion: 'v1', namespace, name: m.name, ...(m.uid ? { uid: m.uid } : {}),
        ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
      },
      reason, message, type, action, count: 1,
      source: { component: this.o.component },
      firstTimestamp: now, lastTimestamp: now,
      reportingComponent: this.o.component, reportingInstance: this.instance,
    };
    const created = await this.o.client.create(ref, event);
    this.written++;
    this.series.set(seriesKey, { namespace, name: created.metadata?.name ?? (event.metadata?.name as string), count: 1 });
    if (this.series.size > (this.o.maxSeries ?? 4096)) {
      const oldest = this.series.keys().next().value;
      if (oldest !== undefined) this.series.delete(oldest);
    }
  }

  async drain(): Promise<void> {
    while (this.writers.size) await Promise.allSettled([...this.writers]);
  }
}

export function scheduledMessage(pod: Pod, node: string): string {
  return `Successfully assigned ${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''} to ${node}`;
}
