/**
 * The scheduler's Prometheus metrics (names as Kubernetes' scheduler exports them):
 * scheduler_schedule_attempts_total{result,profile}, scheduler_scheduling_attempt_duration_seconds,
 * scheduler_pending_pods{queue} and scheduler_cache_size{type}, plus Node's process metrics.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export type AttemptResult = 'scheduled' | 'unschedulable' | 'error';

export interface SchedulerMetrics {
  attempt(result: AttemptResult, seconds: number): void;
}

export interface MetricSources {
  pending(): { active: number; backoff: number; unschedulable: number };
  cache(): { nodes: number; pods: number };
}

export class PromSchedulerMetrics implements SchedulerMetrics {
  readonly registry = new Registry();
  private readonly attempts: Counter<'result' | 'profile'>;
  private readonly duration: Histogram<'result' | 'profile'>;
  private sources: MetricSources | undefined;

  constructor(private readonly profile: string) {
    collectDefaultMetrics({ register: this.registry });
    this.attempts = new Counter({ name: 'scheduler_schedule_attempts_total', help: 'Number of attempts to schedule pods, by the result.', labelNames: ['result', 'profile'], registers: [this.registry] });
    this.duration = new Histogram({
      name: 'scheduler_scheduling_attempt_duration_seconds', help: 'Scheduling attempt latency in seconds (scheduling algorithm + binding).',
      labelNames: ['result', 'profile'], buckets: [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096], registers: [this.registry],
    });
    const self = this;
    new Gauge({
      name: 'scheduler_pending_pods', help: 'Number of pending pods, by the queue type.', labelNames: ['queue'], registers: [this.registry],
      collect() {
        const s = self.sources?.pending() ?? { active: 0, backoff: 0, unschedulable: 0 };
        this.set({ queue: 'active' }, s.active); this.set({ queue: 'backoff' }, s.backoff); this.set({ queue: 'unschedulable' }, s.unschedulable);
      },
    });
    new Gauge({
      name: 'scheduler_cache_size', help: 'Number of nodes and pods in the scheduler cache.', labelNames: ['type'], registers: [this.registry],
      collect() {
        const c = self.sources?.cache() ?? { nodes: 0, pods: 0 };
        this.set({ type: 'nodes' }, c.nodes); this.set({ type: 'pods' }, c.pods);
      },
    });
  }

  setSources(s: MetricSources): void { this.sources = s; }

  attempt(result: AttemptResult, seconds: number): void {
    this.attempts.inc({ result, profile: this.profile });
    this.duration.observe({ result, profile: this.profile }, seconds);
  }
}
