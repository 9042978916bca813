/**
 * The node IPAM controller with Kubernetes' range allocator: every Node gets a pod CIDR, a
 * block of --node-cidr-mask-size cut from --cluster-cidr, written as spec.podCIDR and
 * spec.podCIDRs. Off (a log line, nothing else) unless --allocate-node-cidrs is set; a bad
 * option combination (nodeipam/settings.ts) fails the start.
 *
 * At start, after the node cache synced, the blocks of --service-cluster-ip-range (when it
 * overlaps the cluster CIDR) and every node's existing pod CIDR are marked used; a node whose
 * CIDR does not parse or lies outside the cluster CIDR fails the start, as in Kubernetes (its
 * CIDR could otherwise be handed out twice). Then each node without a CIDR gets the next free
 * block (nodeipam/cidr-set.ts, round robin) — reserved at once in the informer's event order,
 * so nodes get blocks in the order they appear — and a worker patches it onto the node. A
 * deleted node's CIDR is freed. When no block is left the node gets the event CIDRNotAvailable
 * and waits: it is tried again on its next update (node agents post status often) and,
 * beyond Kubernetes, as soon as a deleted node frees a block.
 *
 * Contract: a block is reserved for at most one node at a time; a worker only releases the
 * reservation it made (a delete handler may have taken it over meanwhile); the patch names the
 * node's uid, so a node re-created under the same name never receives the old one's block.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { CidrSet, formatBigCidr, parseBigCidr, type BigCidr } from './nodeipam/cidr-set.js';
import { nodeIpamSettings } from './nodeipam/settings.js';

const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
/** Kubernetes' cidrUpdateWorkers and cidrUpdateRetries. */
const CIDR_UPDATE_WORKERS = 30;
const CIDR_UPDATE_RETRIES = 3;
/** The event source Kubernetes' range allocator records with. */
const EVENT_COMPONENT = 'cidrAllocator';

type Dict = Record<string, unknown>;

/** The node's pod CIDRs: spec.podCIDRs, or the single spec.podCIDR of older writers. */
export function podCidrsOf(node: KubeObject): string[] {
  const spec = (node.spec ?? {}) as Dict;
  const list = Array.isArray(spec.podCIDRs) ? spec.podCIDRs.filter((s): s is string => typeof s === 'string' && s !== '') : [];
  if (list.length) return list;
  return typeof spec.podCIDR === 'string' && spec.podCIDR ? [spec.podCIDR] : [];
}

export class NodeIpamController implements Controller {
  readonly name = 'nodeipam';
  private set!: CidrSet;
  private nodes!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;
  private queue!: WorkQueue;
  /** Node name → the block reserved for it and not yet on the node. */
  private readonly reserved = new Map<string, BigCidr>();
  /** Nodes that found the range exhausted, in the order they asked. */
  private readonly starved = new Set<string>();

  async run(ctx: ControllerContext): Promise<void> {
    const settings = nodeIpamSettings(ctx.config);
    if (!settings) {
      ctx.log.info('--allocate-node-cidrs is false: node CIDR allocation is off');
      return;
    }
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.(EVENT_COMPONENT) ?? noopRecorder;
    this.queue = new WorkQueue({ name: 'nodeipam', log: ctx.log });
    this.set = new CidrSet(settings.clusterCidr, settings.nodeMaskSize);
    if (settings.serviceCidr) this.set.occupy(settings.serviceCidr);
    else if (settings.serviceCidrIgnored) this.log.info({ reason: settings.serviceCidrIgnored }, 'not filtering out a service range');
    this.nodes = ctx.informers.informerFor(NODES);
    ctx.informers.start(ctx.signal);
    if (!await this.nodes.waitForSync(ctx.signal)) return;
    for (const node of this.nodes.indexer.list()) this.occupy(node);
    this.nodes.addEventHandler({
      onAdd: (n) => this.allocateOrOccupy(n, true),
      onUpdate: (_old, n) => { if (podCidrsOf(n).length === 0) this.allocateOrOccupy(n, false); },
      onDelete: (n) => this.release(deletedObject(n)),
    });
    this.log.info({ clusterCidr: formatBigCidr(settings.clusterCidr), nodeMaskSize: settings.nodeMaskSize, blocks: this.set.maxCidrs }, 'starting range CIDR allocator');
    try {
      await this.queue.runWorkers(CIDR_UPDATE_WORKERS, (name) => this.sync(name), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  /** Marks the node's CIDR used; throws (Kubernetes' message) when it is garbage or out of range. */
  private occupy(node: KubeObject): void {
    const name = node.metadata?.name ?? '';
    podCidrsOf(node).forEach((text, i) => {
      if (i > 0) throw new Error(`node:${name} has an allocated cidr: ${text} at index:${i} that does not exist in cluster cidrs configuration`);
      const cidr = parseBigCidr(text);
      if (!cidr) throw new Error(`failed to parse node ${name}, CIDR ${text}`);
      try {
        this.set.occupy(cidr);
      } catch (e) {
        throw new Error(`failed to mark cidr[${text}] at idx [${i}] as occupied for node: ${name}: ${(e as Error).message}`);
      }
    });
  }

  /** A node with a CIDR has it marked used; one without gets a block reserved and queued. */
  private allocateOrOccupy(node: KubeObject, added: boolean): void {
    const name = node.metadata?.name ?? '';
    if (this.reserved.has(name)) return;
    if (podCidrsOf(node).length) {
      if (!added) return;
      try { this.occupy(node); } catch (e) { this.log.error({ node: name, err: (e as Error).message }, 'cannot mark the node\'s CIDR as used'); }
      return;
    }
    if (this.reserve(node)) this.queue.add(name);
  }

  private reserve(node: KubeObject): BigCidr | undefined {
    const name = node.metadata?.name ?? '';
    let cidr: BigCidr;
    try {
      cidr = this.set.allocateNext();
    } catch (e) {
      this.starved.add(name);
      this.recordStatusChange(node, 'CIDRNotAvailable');
      this.log.error({ node: name, err: (e as Error).message }, 'failed to allocate a CIDR from the cluster CIDR');
      return undefined;
    }
    this.starved.delete(name);
    this.reserved.set(name, cidr);
    return cidr;
  }

  private release(node: KubeObject): void {
    const name = node.metadata?.name ?? '';
    let freed = false;
    const held = this.reserved.get(name);
    if (held) { this.set.release(held); this.reserved.delete(name); freed = true; }
    this.starved.delete(name);
    podCidrsOf(node).forEach((text, i) => {
      const cidr = parseBigCidr(text);
      try {
        if (!cidr || i > 0) throw new Error(`failed to parse CIDR ${text} on Node ${name}`);
        this.set.release(cidr);
        freed = true;
      } catch (e) {
        this.log.error({ node: name, err: (e as Error).message }, 'error when releasing CIDR');
      }
    });
    if (!freed) return;
    for (const waiting of [...this.starved]) {
      if (this.set.allocatedCount >= this.set.maxCidrs) break;
      const n = this.nodes.indexer.getByKey(waiting);
      if (n && podCidrsOf(n).length === 0) this.allocateOrOccupy(n, false);
      else this.starved.delete(waiting);
    }
  }

  /** Puts the reserved block on the node (Kubernetes' updateCIDRsAllocation). */
  private async sync(name: string): Promise<void> {
    const node = this.nodes.indexer.getByKey(name);
    let cidr = this.reserved.get(name);
    if (!node) {
      if (cidr) { this.set.release(cidr); this.reserved.delete(name); }
      return;
    }
    const existing = podCidrsOf(node);
    if (existing.length) {
      if (cidr && existing[0] !== formatBigCidr(cidr)) {
        this.log.error({ node: name, podCIDR: existing[0] }, 'node already has a CIDR allocated; releasing the new one');
        this.set.release(cidr);
        try { this.occupy(node); } catch (e) { this.log.error({ node: name, err: (e as Error).message }, 'cannot mark the node\'s CIDR as used'); }
      }
      this.reserved.delete(name);
      return;
    }
    cidr ??= this.reserve(node);
    if (!cidr) return;
    const text = formatBigCidr(cidr);
    let err: unknown;
    for (let i = 0; i < CIDR_UPDATE_RETRIES; i++) {
      try {
        await this.client.patch(NODES, name, 'strategic', { metadata: { uid: node.metadata?.uid }, spec: { podCIDR: text, podCIDRs: [text] } });
        this.log.info({ node: name, cidr: text }, 'set node PodCIDR');
        if (this.reserved.get(name) === cidr) this.reserved.delete(name);
        return;
      } catch (e) {
        err = e;
        if (isApiError(e) && (e.code === 404 || e.code === 409)) break;
      }
    }
    // A delete handler that ran meanwhile already freed the block (and may have handed it on).
    if (this.reserved.get(name) !== cidr) return;
    if (isApiError(err) && (err.code === 404 || err.code === 409)) {
      // Gone, or re-created under the same name: its own events bring it back if it needs a CIDR.
      this.set.release(cidr);
      this.reserved.delete(name);
      return;
    }
    this.log.error({ node: name, cidr: text, err: (err as Error).message }, 'failed to update node PodCIDR after multiple attempts');
    this.recordStatusChange(node, 'CIDRAssignmentFailed');
    // After a timeout the write may still land: keep the block; the retry finds it on the node.
    if (!(isApiError(err) && err.code === 504)) { this.set.release(cidr); this.reserved.delete(name); }
    throw err;
  }

  /** Kubernetes' RecordNodeStatusChange. */
  private recordStatusChange(node: KubeObject, status: string): void {
    const m = node.metadata ?? {};
    this.events.event({ apiVersion: 'v1', kind: 'Node', metadata: { name: m.name ?? '', uid: m.uid ?? '' } }, 'Normal', status, `Node ${m.name ?? ''} status is now: ${status}`);
  }
}

export function newNodeIpamController(): Controller {
  return new NodeIpamController();
}
