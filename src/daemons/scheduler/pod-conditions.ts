/**
 * Marks an unschedulable pod's status condition PodScheduled=False, reason Unschedulable, with
 * the fit summary as message (what `kubectl describe` and autoscalers read), as Kubernetes
 * does. A strategic merge patch on pods/status keyed by condition type leaves other
 * conditions alone. Skipped when the pod already shows the same condition, so retries do not
 * rewrite it.
 *
 * Contract: `markUnschedulable` never throws and never blocks (background writes, at most
 * `maxInFlight`, extra ones dropped); `drain` waits for those in flight.
 */
import { pino, type Logger } from 'pino';
import type { RestClient } from '../../client/rest-client.js';
import type { Pod } from './types.js';

export interface PodConditionWriter {
  markUnschedulable(pod: Pod, message: string): void;
}

interface Condition { type?: string; status?: string; reason?: string; message?: string }

export class ApiPodConditionWriter implements PodConditionWriter {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly log: Logger;

  constructor(private readonly client: RestClient, log?: Logger, private readonly maxInFlight = 100) {
    this.log = log ?? pino({ level: 'silent' });
  }

  markUnschedulable(pod: Pod, message: string): void {
    const conds = ((pod.status as { conditions?: Condition[] } | undefined)?.conditions) ?? [];
    const cur = conds.find((c) => c.type === 'PodScheduled');
    if (cur && cur.status === 'False' && cur.reason === 'Unschedulable' && cur.message === message) return;
    if (this.inFlight.size >= this.maxInFlight) return;
    const m = pod.metadata ?? {};
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const patch = {
      status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastProbeTime: null, lastTransitionTime: cur?.status === 'False' ? undefined : now }] },
    };
    const p = this.client.patch({ group: '', version: 'v1', resource: 'pods', namespace: m.namespace ?? 'default' }, m.name ?? '', 'strategic', patch, { subresource: 'status' })
      .then(() => undefined, (e: unknown) => { this.log.debug({ pod: `${m.namespace}/${m.name}`, err: (e as Error).message }, 'cannot set the PodScheduled condition'); })
      .finally(() => { this.inFlight.delete(p); });
    this.inFlight.add(p);
  }

  async drain(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }
}
