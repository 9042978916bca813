/**
 * The attach/detach controller (Kubernetes' attachdetach, for CSI volumes: every in-tree
 * attachable plugin moved to a CSI driver). For the nodes whose agents leave attaching to it
 * (annotation volumes.kubernetes.io/controller-managed-attach-detach: "true",
 * --enable-controller-attach-detach on the node agent), it keeps one VolumeAttachment per
 * (CSI volume, node) that a scheduled pod there uses, when the driver attaches (its CSIDriver's
 * spec.attachRequired, true when the driver has no CSIDriver object, as in Kubernetes). The
 * driver's external attacher does the attaching and sets status.attached; the node agent waits
 * for it before staging the volume. A VolumeAttachment no pod needs any more is deleted
 * (detach) once the node no longer lists the volume in status.volumesInUse (it unmounted it).
 * Node status.volumesAttached lists the attached volumes (kubernetes.io/csi/<driver>^<handle>).
 *
 * Contract: one reconcile at a time (a one-key work queue), run on every relevant change and,
 * unless --disable-attach-detach-reconcile-sync, every --attach-detach-reconcile-sync-period.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { realClock, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { sameInGoForm } from '../../../api/codec/go-json.js';

const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const CLAIMS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims' };
const VOLUMES: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };
const DRIVERS: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'csidrivers' };
const ATTACHMENTS: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'volumeattachments' };
export const CONTROLLER_MANAGED_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';
const KEY = 'reconcile';

type Dict = Record<string, unknown>;
const spec = (o: KubeObject | undefined): Dict => (o?.spec ?? {}) as Dict;

/** Kubernetes' VolumeAttachment name: csi-<sha256(volumeHandle + attacher + nodeName)>. */
export function attachmentName(handle: string, driver: string, node: string): string {
  return `csi-${createHash('sha256').update(`${handle}${driver}${node}`).digest('hex')}`;
}

/** The unique volume name nodes report in volumesInUse / volumesAttached. */
export function csiVolumeName(driver: string, handle: string): string {
  return `kubernetes.io/csi/${driver}^${handle}`;
}

interface Wanted { name: string; driver: string; handle: string; node: string; pv: string }

export class AttachDetachController implements Controller {
  readonly name = 'attachdetach';
  private client!: RestClient;
  private events: EventRecorder = noopRecorder;
  private queue!: WorkQueue;
  private inf!: Record<'pods' | 'nodes' | 'claims' | 'volumes' | 'drivers' | 'attachments', SharedIndexInformer>;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.events = ctx.events?.('attachdetach-controller') ?? noopRecorder;
    this.queue = new WorkQueue({ name: 'attachdetach', log: ctx.log });
    const f = ctx.informers;
    this.inf = {
      pods: f.informerFor(PODS), nodes: f.informerFor(NODES), claims: f.informerFor(CLAIMS),
      volumes: f.informerFor(VOLUMES), drivers: f.informerFor(DRIVERS), attachments: f.informerFor(ATTACHMENTS),
    };
    const kick = (): void => this.queue.add(KEY);
    for (const i of Object.values(this.inf)) i.addEventHandler({ onAdd: kick, onUpdate: kick, onDelete: kick });
    f.start(ctx.signal);
    const synced = await Promise.all(Object.values(this.inf).map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    kick();
    const periodic = async (): Promise<void> => {
      if (ctx.config.disableAttachDetachReconcileSync) return;
      for (;;) {
        try { await realClock.sleep(ctx.config.attachDetachReconcileSyncPeriod, ctx.signal); } catch { return; }
        kick();
      }
    };
    try {
      await Promise.all([periodic(), this.queue.runWorkers(1, () => this.reconcile(), ctx.signal)]);
    } finally {
      await this.events.flush();
    }
  }

  private attachRequired(driver: string): boolean {
    const d = this.inf.drivers.indexer.get(undefined, driver);
    return d ? spec(d).attachRequired !== false : true;
  }

  /** The attachments the scheduled pods of managed nodes need. */
  private wanted(): Map<string, Wanted> {
    const out = new Map<string, Wanted>();
    for (const pod of this.inf.pods.indexer.list()) {
      const ps = spec(pod) as { nodeName?: string; volumes?: Array<{ persistentVolumeClaim?: { claimName?: string } }> };
      const phase = (pod.status as { phase?: string } | undefined)?.phase;
      if (!ps.nodeName || phase === 'Succeeded' || phase === 'Failed') continue;
      const node = this.inf.nodes.indexer.get(undefined, ps.nodeName);
      if (node?.metadata?.annotations?.[CONTROLLER_MANAGED_ANNOTATION] !== 'true') continue;
      for (const v of ps.volumes ?? []) {
        const claimName = v.persistentVolumeClaim?.claimName;
        if (!claimName) continue;
        const claim = this.inf.claims.indexer.get(pod.metadata?.namespace ?? '', claimName);
        const pvName = String(spec(claim).volumeName ?? '');
        const pv = pvName ? this.inf.volumes.indexer.get(undefined, pvName) : undefined;
        const csi = spec(pv).csi as { driver?: string; volumeHandle?: string } | undefined;
        if (!csi?.driver || !csi.volumeHandle || !this.attachRequired(csi.driver)) continue;
        const name = attachmentName(csi.volumeHandle, csi.driver, ps.nodeName);
        out.set(name, { name, driver: csi.driver, handle: csi.volumeHandle, node: ps.nodeName, pv: pvName });
      }
    }
    return out;
  }

  private async reconcile(): Promise<void> {
    const wanted = this.wanted();
    const existing = new Map(this.inf.attachments.indexer.list().map((a) => [a.metadata?.name ?? '', a]));
    for (const w of wanted.values()) {
      if (existing.has(w.name)) continue;
      try {
        await this.client.create(ATTACHMENTS, {
          apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: { name: w.name },
          spec: { attacher: w.driver, nodeName: w.node, source: { persistentVolumeName: w.pv } },
        });
      } catch (e) {
        if ((e as { code?: number }).code !== 409) throw e;
      }
    }
    for (const [name, a] of existing) {
      if (wanted.has(name) || a.metadata?.deletionTimestamp) continue;
      const s = spec(a) as { attacher?: string; nodeName?: string; source?: { persistentVolumeName?: string } };
      // Only attachments of CSI volumes (a persistent volume source), as Kubernetes.
      const pv = s.source?.persistentVolumeName ? this.inf.volumes.indexer.get(undefined, s.source.persistentVolumeName) : undefined;
      const handle = String((spec(pv).csi as { volumeHandle?: string } | undefined)?.volumeHandle ?? '');
      const node = this.inf.nodes.indexer.get(undefined, s.nodeName ?? '');
      const inUse = ((node?.status as { volumesInUse?: string[] } | undefined)?.volumesInUse ?? []);
      // Detach only what the node has unmounted (a pod being torn down still uses its volume).
      if (handle && inUse.includes(csiVolumeName(s.attacher ?? '', handle))) continue;
      try {
        await this.client.delete(ATTACHMENTS, name);
      } catch (e) {
        if ((e as { code?: number }).code !== 404) throw e;
      }
    }
    await this.updateNodes();
  }

  /** status.volumesAttached of every node from its attached VolumeAttachments. */
  private async updateNodes(): Promise<void> {
    const byNode = new Map<string, Array<{ name: string; devicePath: string }>>();
    for (const a of this.inf.attachments.indexer.list()) {
      const s = spec(a) as { attacher?: string; nodeName?: string; source?: { persistentVolumeName?: string } };
      if (!(a.status as { attached?: boolean } | undefined)?.attached || !s.nodeName) continue;
      const pv = this.inf.volumes.indexer.get(undefined, s.source?.persistentVolumeName ?? '');
      const handle = (spec(pv).csi as { volumeHandle?: string } | undefined)?.volumeHandle;
      if (!handle) continue;
      const list = byNode.get(s.nodeName) ?? [];
      list.push({ name: csiVolumeName(s.attacher ?? '', handle), devicePath: '' });
      byNode.set(s.nodeName, list);
    }
    for (const node of this.inf.nodes.indexer.list()) {
      if (node.metadata?.annotations?.[CONTROLLER_MANAGED_ANNOTATION] !== 'true') continue;
      const want = (byNode.get(node.metadata?.name ?? '') ?? []).sort((a, b) => a.name.localeCompare(b.name));
      const have = ((node.status as { volumesAttached?: unknown[] } | undefined)?.volumesAttached ?? []);
      if (sameInGoForm('k8s.io.api.core.v1.AttachedVolume', have, want)) continue;
      await this.client.patch(NODES, node.metadata?.name ?? '', 'merge', { status: { volumesAttached: want.length ? want : null } }, { subresource: 'status' });
    }
  }
}

export function newAttachDetachController(): Controller {
  return new AttachDetachController();
}
