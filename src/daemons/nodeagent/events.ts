/**
 * Event recorder for pod lifecycle events (Pulled, Created, Started, Killing, BackOff,
 * Unhealthy, FailedMount, FailedCreatePodSandBox ...). Events first go through Kubernetes'
 * event correlator (src/client/event-correlator.ts): repeats patch the count of the Event
 * written before, more than 10 different messages of one reason within 10 minutes are
 * combined, and each pod gets 25 events and then one per 5 minutes. What is left is limited by
 * --event-qps / --event-burst: events over that budget are dropped (counted), never queued,
 * so a crash-looping pod cannot flood the API.
 * Writes about one Event are serialized, so that a repeat never patches an Event whose create
 * is still in flight; a patch that finds the Event gone creates it again.
 * Contract: `emit` never throws and never waits for the API.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { Clock } from '../../client/clock.js';
import { EventCorrelator, type CorrelatedEvent } from '../../client/event-correlator.js';
import { TokenBucket } from '../../client/rate-limiter.js';
import type { RestClient } from '../../client/rest-client.js';
import { kubeTime, type Pod } from './pod-types.js';

export interface EventSink {
  emit(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string, fieldPath?: string): void;
}

export interface EventRecorderOptions {
  readonly client?: RestClient;
  readonly nodeName: string;
  readonly qps: number;
  readonly burst: number;
  readonly log: Logger;
  readonly signal?: AbortSignal;
  readonly clock?: Clock;
}

export class EventRecorder implements EventSink {
  dropped = 0;
  sent = 0;
  /** Events the correlator's spam filter dropped. */
  filtered = 0;
  private readonly bucket: TokenBucket;
  private readonly correlator: EventCorrelator;
  /** The last write of each Event name, so that writes of one Event never overlap. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly o: EventRecorderOptions) {
    this.bucket = new TokenBucket({ qps: o.qps, burst: Math.max(1, o.burst), ...(o.clock ? { clock: o.clock } : {}) });
    this.correlator = new EventCorrelator({
      ...(o.clock ? { clock: o.clock } : {}),
      newName: (ev) => `${ev.involvedObject.name ?? 'object'}.${(o.clock?.now() ?? Date.now()).toString(16)}${randomBytes(3).toString('hex')}`,
    });
  }

  emit(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string, fieldPath?: string): void {
    this.o.log.debug({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, reason, message }, 'event');
    const client = this.o.client;
    if (!client) return;
    const ns = pod.metadata?.namespace ?? 'default';
    const base: CorrelatedEvent = {
      type, reason, message,
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: ns, name: pod.metadata?.name ?? '', ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}), ...(fieldPath ? { fieldPath } : {}) },
      source: { component: 'kubelet', host: this.o.nodeName },
      reportingComponent: 'kubelet', reportingInstance: this.o.nodeName,
    };
    const c = this.correlator.correlate(base);
    if (c.action === 'skip') { this.filtered++; return; }
    if (!this.bucket.unlimited && !this.bucket.tryTake()) { this.dropped++; return; }
    if (this.o.signal?.aborted) return;
    this.sent++;
    const now = this.o.clock?.now() ?? Date.now();
    const ref = { group: '', version: 'v1', resource: 'events', namespace: ns };
    const opts = this.o.signal ? { signal: this.o.signal } : {};
    const count = c.action === 'patch' ? c.count : 1;
    const create = (): Promise<unknown> => client.create(ref, {
      apiVersion: 'v1', kind: 'Event', metadata: { name: c.name, namespace: ns },
      involvedObject: base.involvedObject, reason, message: c.message, type, count,
      firstTimestamp: kubeTime(c.firstTimestamp), lastTimestamp: kubeTime(now),
      source: base.source, reportingComponent: 'kubelet', reportingInstance: this.o.nodeName,
    }, opts);
    const write = async (): Promise<void> => {
      if (c.action === 'create') { await create(); return; }
      try {
        await client.patch(ref, c.name, 'strategic', { count, lastTimestamp: kubeTime(now), message: c.message }, opts);
      } catch (e) {
        if (!(isApiError(e) && e.status.code === 404)) throw e;
        await create();
      }
    };
    const prev = this.chains.get(c.name) ?? Promise.resolve();
    const next = prev.then(write).catch((e: Error) => {
      this.o.log.debug({ err: e.message, reason }, 'event not recorded');
    });
    this.chains.set(c.name, next);
    void next.finally(() => { if (this.chains.get(c.name) === next) this.chains.delete(c.name); });
  }

  /** Waits for the writes in flight (tests). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.chains.values()]);
  }
}
