/**
 * The TTL controller: annotates every Node with node.alpha.kubernetes.io/ttl, the number of
 * seconds its node agent may cache secrets and config maps before fetching them again. The value
 * grows with the cluster's size (TTL_BOUNDARIES): the larger the cluster, the fewer refetches
 * reach the API server.
 *
 * The node count moves one step through the table at a time with Kubernetes' hysteresis: a step
 * is left upwards when the count exceeds its sizeMax and downwards when it drops below its
 * sizeMin, so a cluster hovering around 100 nodes does not flap between two values. When the
 * value changes every cached node is queued (Kubernetes waits for each node's next status
 * update instead); a node is patched only when its annotation differs from the value.
 *
 * Contract: the count is the node cache's size, read on each add and delete notification (the
 * initial list included); a worker reads the current value when it syncs, so a node queued under
 * an older value gets the newest; failed patches are retried with backoff.
 */
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
export const TTL_ANNOTATION = 'node.alpha.kubernetes.io/ttl';
/** Kubernetes starts the TTL controller with 5 workers. */
const WORKERS = 5;

export interface TtlBoundary { sizeMin: number; sizeMax: number; ttlSeconds: number }

/** Kubernetes' table; neighbouring steps overlap (90..100, 450..500, 900..1000, 1800..2000). */
export const TTL_BOUNDARIES: readonly TtlBoundary[] = [
  { sizeMin: 0, sizeMax: 100, ttlSeconds: 0 },
  { sizeMin: 90, sizeMax: 500, ttlSeconds: 15 },
  { sizeMin: 450, sizeMax: 1000, ttlSeconds: 30 },
  { sizeMin: 900, sizeMax: 2000, ttlSeconds: 60 },
  { sizeMin: 1800, sizeMax: 2 ** 31 - 1, ttlSeconds: 300 },
];

/** The table step for `nodeCount` nodes, coming from step `step`. */
export function ttlBoundaryStep(step: number, nodeCount: number, table: readonly TtlBoundary[] = TTL_BOUNDARIES): number {
  let s = step;
  while (s < table.length - 1 && nodeCount > (table[s] as TtlBoundary).sizeMax) s++;
  while (s > 0 && nodeCount < (table[s] as TtlBoundary).sizeMin) s--;
  return s;
}

/** The annotation's integer (Go's strconv.Atoi: optional sign, decimal digits), or undefined. */
function annotatedTtl(node: KubeObject): number | undefined {
  const v = node.metadata?.annotations?.[TTL_ANNOTATION];
  return v !== undefined && /^[+-]?\d+$/.test(v) ? Number(v) : undefined;
}

export class TtlController implements Controller {
  readonly name = 'ttl';
  private nodes!: SharedIndexInformer;
  private client!: RestClient;
  private queue!: WorkQueue;
  private step = 0;

  /** The number of nodes in the controller's cache (tests wait on it). */
  get nodeCount(): number { return this.nodes?.indexer.size ?? 0; }
  /** The TTL every node should carry now. */
  get desiredTtlSeconds(): number { return (TTL_BOUNDARIES[this.step] as TtlBoundary).ttlSeconds; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.queue = new WorkQueue({ name: 'ttlcontroller', log: ctx.log });
    this.nodes = ctx.informers.informerFor(NODES);
    this.nodes.addEventHandler({
      onAdd: (n) => { this.resize(); this.queue.add(keyOf(n)); },
      onUpdate: (_old, n) => this.queue.add(keyOf(n)),
      onDelete: () => this.resize(),
    });
    ctx.informers.start(ctx.signal);
    if (!await this.nodes.waitForSync(ctx.signal)) return;
    await this.queue.runWorkers(WORKERS, (name) => this.sync(name), ctx.signal);
  }

  /** Moves through the table with the cache's node count (the informer updates it before telling us). */
  private resize(): void {
    const before = this.desiredTtlSeconds;
    this.step = ttlBoundaryStep(this.step, this.nodes.indexer.size);
    if (this.desiredTtlSeconds !== before) for (const n of this.nodes.indexer.list()) this.queue.add(keyOf(n));
  }

  private async sync(name: string): Promise<void> {
    const node = this.nodes.indexer.getByKey(name);
    if (!node) return;
    const want = this.desiredTtlSeconds;
    if (annotatedTtl(node) === want) return;
    await this.client.patch(NODES, name, 'strategic', { metadata: { annotations: { [TTL_ANNOTATION]: String(want) } } });
  }
}

export function newTtlController(): Controller {
  return new TtlController();
}
