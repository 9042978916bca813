/**
 * Event recorder for pod lifecycle events (Pulled, Created, Started, Killing, BackOff,
 * Unhealthy, FailedCreatePodSandBox ...), limited by --event-qps / --event-burst: events over
 * the budget are dropped (counted), never queued, so a crash-looping pod cannot flood the API.
 * Contract: `emit` never throws and never waits for the API.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { TokenBucket } from '../../client/rate-limiter.js';
import type { RestClient } from '../../client/rest-client.js';
import { kubeTime, type Pod } from './pod-types.js';

export interface EventSink {
  emit(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string, fieldPath?: string): void;
}

export class EventRecorder implements EventSink {
  dropped = 0;
  sent = 0;
  private readonly bucket: TokenBucket;

  constructor(private readonly o: { client?: RestClient; nodeName: string; qps: number; burst: number; log: Logger; signal?: AbortSignal }) {
    this.bucket = new TokenBucket({ qps: o.qps, burst: Math.max(1, o.burst) });
  }

  emit(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string, fieldPath?: string): void {
    this.o.log.debug({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, reason, message }, 'event');
    const client = this.o.client;
    if (!client) return;
    if (!this.bucket.unlimited && !this.bucket.tryTake()) { this.dropped++; return; }
    const ns = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    const now = Date.now();
    const ev = {
      apiVersion: 'v1', kind: 'Event',
      metadata: { name: `${name}.${now.toString(16)}${randomBytes(3).toString('hex')}`, namespace: ns },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: ns, name, uid: pod.metadata?.uid, ...(fieldPath ? { fieldPath } : {}) },
      reason, message, type, count: 1,
      firstTimestamp: kubeTime(now), lastTimestamp: kubeTime(now),
      source: { component: 'kubelet', host: this.o.nodeName },
      reportingComponent: 'kubelet', reportingInstance: this.o.nodeName,
    };
    this.sent++;
    if (this.o.signal?.aborted) return;
    client.create({ group: '', version: 'v1', resource: 'events', namespace: ns }, ev, this.o.signal ? { signal: this.o.signal } : {}).catch((e: Error) => {
      this.o.log.debug({ err: e.message, reason }, 'event not recorded');
    });
  }
}
