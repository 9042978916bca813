/** What the sync loop (proxier.ts) needs from a mode's rule writer (nftables, iptables). */
import type { EndpointSliceObject, ServiceObject, ServicePort } from './service-model.js';

export interface SyncCounts {
  /** Service ports programmed. */
  ports: number;
  /** Endpoint chains programmed. */
  endpoints: number;
  /** The UDP service ports programmed (stale conntrack entries are cleared from them). */
  udpPorts: readonly ServicePort[];
}

export interface RuleWriter {
  /** True once a sync succeeded and nothing since forced a full one. */
  readonly hasApplied: boolean;
  /** Programs these objects; `full` rewrites everything of ours. Throws when it failed. */
  sync(services: readonly ServiceObject[], slices: readonly EndpointSliceObject[], full: boolean): Promise<SyncCounts>;
  /** Forgets what was applied: the next sync is full. */
  reset(): void;
}
