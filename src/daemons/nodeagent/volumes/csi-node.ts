/**
 * CSI volumes on the node: the node agent is the client of each driver's Node service
 * (csi/csi-client.ts), at <root-dir>/plugins/<driver>/csi.sock as Kubernetes lays driver
 * sockets out. For a pod's CSI volume, in Kubernetes' order:
 *   NodeGetInfo and NodeGetCapabilities (once per driver),
 *   NodeStageVolume to <root-dir>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount
 *     (once per volume on the node, when the driver has STAGE_UNSTAGE_VOLUME),
 *   NodePublishVolume to the pod's <pod>/volumes/kubernetes.io~csi/<name>/mount (per pod),
 * and when the pod goes: NodeUnpublishVolume for each of its targets, then NodeUnstageVolume
 * once no other pod on the node has the volume published. What a pod published is written
 * next to the target (vol_data.json), so a restarted agent still tears it down. Secrets named
 * by nodeStageSecretRef / nodePublishSecretRef are read with the node's credentials; the
 * publish context of an attached volume comes from its VolumeAttachment (attachments option).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectReader } from '../env.js';
import type { Pod } from '../pod-types.js';
import { CsiClient } from './csi/csi-client.js';
import { csiVolumeName } from './csi-attach.js';

/** Sets up and tears down the CSI volumes of pods. */
export interface CsiVolumes {
  /** Stages (once per volume on the node) and publishes the volume at `target`. */
  setUp(pod: Pod, volume: KubeObject, target: string, readOnly: boolean): Promise<void>;
  /** Unpublishes every CSI volume of the pod (its targets under `csiDir`), unstaging what no other pod uses. */
  tearDownPod(uid: string, csiDir: string): Promise<void>;
  /** Finishes the expansion of a published volume on the node (NodeExpandVolume when the driver does that). */
  expand(volume: KubeObject, target: string, requiredBytes: number): Promise<void>;
}

/** The publish context of an attached volume (its VolumeAttachment's attachmentMetadata); undefined: not attached (yet). */
export type AttachmentLookup = (driver: string, volumeHandle: string, pvName: string) => Promise<Record<string, string> | undefined>;

export interface CsiNodeOptions {
  readonly rootDir: string;
  readonly reader: ObjectReader;
  /** The driver's socket; default <root-dir>/plugins/<driver>/csi.sock. */
  readonly socketFor?: (driver: string) => string;
  /** Drivers that need attaching wait for their VolumeAttachment (attachdetach controller). */
  readonly attachments?: { required(driver: string): Promise<boolean>; lookup: AttachmentLookup };
  readonly log?: Logger;
}

interface DriverEntry { client: CsiClient; stages: boolean; expands: boolean; nodeId: string }
interface VolData { driver: string; volumeHandle: string; stagingPath: string; pvName: string }
interface CsiSpec { driver?: string; volumeHandle?: string; readOnly?: boolean; fsType?: string; volumeAttributes?: Record<string, string>; nodeStageSecretRef?: { name?: string; namespace?: string }; nodePublishSecretRef?: { name?: string; namespace?: string } }

const ACCESS_MODES: Record<string, string> = {
  ReadWriteOnce: 'SINGLE_NODE_WRITER', ReadOnlyMany: 'MULTI_NODE_READER_ONLY', ReadWriteMany: 'MULTI_NODE_MULTI_WRITER', ReadWriteOncePod: 'SINGLE_NODE_SINGLE_WRITER',
};

export class CsiNode implements CsiVolumes {
  private readonly clients = new Map<string, DriverEntry>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly log: Logger;

  constructor(private readonly o: CsiNodeOptions) {
    this.log = o.log ?? pino({ level: 'silent' });
  }

  private socket(driver: string): string {
    return this.o.socketFor?.(driver) ?? join(this.o.rootDir, 'plugins', driver, 'csi.sock');
  }

  /** The driver's client, with its node id and capabilities asked once. */
  private async driver(name: string): Promise<DriverEntry> {
    const known = this.clients.get(name);
    if (known) return known;
    const client = new CsiClient(this.socket(name));
    try {
      const info = await client.call<{ nodeId?: string }>('NodeGetInfo', {});
      const caps = await client.call<{ capabilities?: Array<{ rpc?: { type?: string } }> }>('NodeGetCapabilities', {});
      const has = (type: string): boolean => (caps.capabilities ?? []).some((c) => c.rpc?.type === type);
      const entry = { client, stages: has('STAGE_UNSTAGE_VOLUME'), expands: has('EXPAND_VOLUME'), nodeId: info.nodeId ?? '' };
      this.clients.set(name, entry);
      this.log.info({ driver: name, nodeId: entry.nodeId, stages: entry.stages }, 'CSI driver found');
      return entry;
    } catch (e) {
      client.close();
      throw new Error(`kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name ${name} not found in the list of registered CSI drivers (${(e as Error).message})`);
    }
  }

  /** One operation at a time per volume handle (stage/unstage decisions read the node's state). */
  private async serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    const chained = prev.then(() => mine);
    this.locks.set(key, chained);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.locks.get(key) === chained) this.locks.delete(key);
    }
  }

  private async secrets(ref: { name?: string; namespace?: string } | undefined): Promise<Record<string, string>> {
    if (!ref?.name) return {};
    const s = await this.o.reader.secret(ref.namespace ?? 'default', ref.name);
    if (!s) throw new Error(`fetching NodeStageSecretRef ${ref.namespace}/${ref.name} failed: secret not found`);
    return s;
  }

  stagingPath(driver: string, handle: string): string {
    return join(this.o.rootDir, 'plugins', 'kubernetes.io', 'csi', driver, createHash('sha256').update(handle).digest('hex'), 'globalmount');
  }

  async setUp(pod: Pod, volume: KubeObject, target: string, readOnly: boolean): Promise<void> {
    const spec = (volume.spec ?? {}) as { csi?: CsiSpec; accessModes?: string[]; mountOptions?: string[] };
    const csi = spec.csi ?? {};
    const driverName = String(csi.driver ?? '');
    const handle = String(csi.volumeHandle ?? '');
    const pvName = volume.metadata?.name ?? '';
    await this.serial(handle, async () => {
      const d = await this.driver(driverName);
      let publishContext: Record<string, string> = {};
      if (this.o.attachments && await this.o.attachments.required(driverName)) {
        const ctx = await this.o.attachments.lookup(driverName, handle, pvName);
        if (!ctx) throw new Error(`volume ${pvName} is not attached to the node yet (waiting for its VolumeAttachment)`);
        publishContext = ctx;
      }
      const capability = {
        mount: { fsType: csi.fsType ?? '', mountFlags: spec.mountOptions ?? [] },
        accessMode: { mode: ACCESS_MODES[spec.accessModes?.[0] ?? 'ReadWriteOnce'] ?? 'SINGLE_NODE_WRITER' },
      };
      const volumeContext = csi.volumeAttributes ?? {};
      const staging = d.stages ? this.stagingPath(driverName, handle) : '';
      if (staging && !(await this.isStaged(staging))) {
        await mkdir(staging, { recursive: true });
        await d.client.call('NodeStageVolume', {
          volumeId: handle, publishContext, stagingTargetPath: staging, volumeCapability: capability,
          secrets: await this.secrets(csi.nodeStageSecretRef), volumeContext,
        });
        await writeFile(join(dirname(staging), 'vol_data.json'), JSON.stringify({ driver: driverName, volumeHandle: handle }));
      }
      await mkdir(dirname(target), { recursive: true });
      const data: VolData = { driver: driverName, volumeHandle: handle, stagingPath: staging, pvName };
      // Written before publishing: a failed or interrupted publish is still unpublished at teardown.
      await writeFile(join(dirname(target), 'vol_data.json'), JSON.stringify(data));
      await d.client.call('NodePublishVolume', {
        volumeId: handle, publishContext, stagingTargetPath: staging, targetPath: target, volumeCapability: capability,
        readonly: readOnly, secrets: await this.secrets(csi.nodePublishSecretRef),
        volumeContext: { ...volumeContext, 'csi.storage.k8s.io/pod.name': pod.metadata?.name ?? '', 'csi.storage.k8s.io/pod.namespace': pod.metadata?.namespace ?? '', 'csi.storage.k8s.io/pod.uid': pod.metadata?.uid ?? '', 'csi.storage.k8s.io/serviceAccount.name': pod.spec?.serviceAccountName || 'default' },
      });
    });
  }

  private async isStaged(staging: string): Promise<boolean> {
    try { await readFile(join(dirname(staging), 'vol_data.json')); return true; } catch { return false; }
  }

  /** Published targets of the handle in every pod on the node. */
  private async publishedElsewhere(handle: string, except: string): Promise<boolean> {
    const pods = join(this.o.rootDir, 'pods');
    for (const uid of await readdir(pods).catch(() => [] as string[])) {
      const dir = join(pods, uid, 'volumes', 'kubernetes.io~csi');
      if (dir === except) continue;
      for (const v of await readdir(dir).catch(() => [] as string[])) {
        try {
          const d = JSON.parse(await readFile(join(dir, v, 'vol_data.json'), 'utf8')) as VolData;
          if (d.volumeHandle === handle) return true;
        } catch { /* not a CSI volume directory */ }
      }
    }
    return false;
  }

  async tearDownPod(_uid: string, csiDir: string): Promise<void> {
    for (const v of await readdir(csiDir).catch(() => [] as string[])) {
      let data: VolData;
      try { data = JSON.parse(await readFile(join(csiDir, v, 'vol_data.json'), 'utf8')) as VolData; } catch { continue; }
      await this.serial(data.volumeHandle, async () => {
        const d = await this.driver(data.driver);
        const target = join(csiDir, v, 'mount');
        await d.client.call('NodeUnpublishVolume', { volumeId: data.volumeHandle, targetPath: target });
        await rm(join(csiDir, v), { recursive: true, force: true });
        if (data.stagingPath && !(await this.publishedElsewhere(data.volumeHandle, csiDir))) {
          await d.client.call('NodeUnstageVolume', { volumeId: data.volumeHandle, stagingTargetPath: data.stagingPath });
          await rm(dirname(data.stagingPath), { recursive: true, force: true });
        }
      });
    }
  }

  /**
   * Finishes an expansion on the node: NodeExpandVolume on the pod's publish target when the
   * driver has EXPAND_VOLUME (a driver without it has nothing to do on the node).
   */
  async expand(volume: KubeObject, target: string, requiredBytes: number): Promise<void> {
    const spec = (volume.spec ?? {}) as { csi?: CsiSpec; accessModes?: string[]; mountOptions?: string[] };
    const csi = spec.csi ?? {};
    const driverName = String(csi.driver ?? '');
    const handle = String(csi.volumeHandle ?? '');
    await this.serial(handle, async () => {
      const d = await this.driver(driverName);
      if (!d.expands) return;
      await d.client.call('NodeExpandVolume', {
        volumeId: handle, volumePath: target, capacityRange: { requiredBytes: String(requiredBytes), limitBytes: '0' },
        stagingTargetPath: d.stages ? this.stagingPath(driverName, handle) : '',
        volumeCapability: { mount: { fsType: csi.fsType ?? '', mountFlags: spec.mountOptions ?? [] }, accessMode: { mode: ACCESS_MODES[spec.accessModes?.[0] ?? 'ReadWriteOnce'] ?? 'SINGLE_NODE_WRITER' } },
      });
    });
  }

  /** kubernetes.io/csi/<driver>^<handle> of every CSI volume a pod on this node has published (node status.volumesInUse). */
  async volumesInUse(): Promise<string[]> {
    const out = new Set<string>();
    const pods = join(this.o.rootDir, 'pods');
    for (const uid of await readdir(pods).catch(() => [] as string[])) {
      const dir = join(pods, uid, 'volumes', 'kubernetes.io~csi');
      for (const v of await readdir(dir).catch(() => [] as string[])) {
        try {
          const d = JSON.parse(await readFile(join(dir, v, 'vol_data.json'), 'utf8')) as VolData;
          out.add(csiVolumeName(d.driver, d.volumeHandle));
        } catch { /* not a CSI volume directory */ }
      }
    }
    return [...out].sort();
  }

  close(): void {
    for (const c of this.clients.values()) c.client.close();
    this.clients.clear();
  }
}
