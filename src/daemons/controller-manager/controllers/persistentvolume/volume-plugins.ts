/**
 * The in-tree volume plugins kube-controller-manager gives its volume controllers, reduced to
 * what decides their behaviour here: host-path (deleter restricted to /tmp/.+, recycler,
 * provisioner off unless --enable-hostpath-provisioner), nfs (recycler only), and ours,
 * corectl.io/local-path (provisioner and deleter, local-path.ts). Every other
 * in-tree plugin moved to a CSI driver (CSI migration, always on for these): their volumes and
 * classes are handed to the external controllers of those drivers. No other plugin exists, so
 * any other volume source has no deleter and no recycler, and any other `kubernetes.io/`
 * provisioner is unknown, with Kubernetes' messages for each case.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { LOCAL_PATH_PROVISIONER } from './local-path.js';
import { ANN_DYNAMICALLY_PROVISIONED, ANN_MIGRATED_TO, nameOf, volumeSpec } from './volume-helpers.js';

export const HOST_PATH_PLUGIN = 'kubernetes.io/host-path';
const NFS_PLUGIN = 'kubernetes.io/nfs';

/** Migrated in-tree plugins: their PersistentVolume source field and CSI driver. */
const CSI_MIGRATION: Readonly<Record<string, { source: string; driver: string }>> = {
  'kubernetes.io/aws-ebs': { source: 'awsElasticBlockStore', driver: 'ebs.csi.aws.com' },
  'kubernetes.io/gce-pd': { source: 'gcePersistentDisk', driver: 'pd.csi.storage.gke.io' },
  'kubernetes.io/azure-disk': { source: 'azureDisk', driver: 'disk.csi.azure.com' },
  'kubernetes.io/azure-file': { source: 'azureFile', driver: 'file.csi.azure.com' },
  'kubernetes.io/cinder': { source: 'cinder', driver: 'cinder.csi.openstack.org' },
  'kubernetes.io/vsphere-volume': { source: 'vsphereVolume', driver: 'csi.vsphere.vmware.com' },
  'kubernetes.io/portworx-volume': { source: 'portworxVolume', driver: 'pxd.portworx.com' },
};

/** The CSI driver that took over an in-tree plugin, if it was migrated. */
export function migratedDriver(plugin: string): string | undefined {
  return CSI_MIGRATION[plugin]?.driver;
}

/** The migrated in-tree plugin a volume's source belongs to, if any. */
export function migratedPluginOf(volume: KubeObject): string | undefined {
  const spec = volumeSpec(volume);
  return Object.keys(CSI_MIGRATION).find((p) => spec[CSI_MIGRATION[p]!.source] != null);
}

/** What deleting a released volume's storage takes. */
export type Deleter =
  | { kind: 'external' }
  | { kind: 'host-path'; path: string }
  | { kind: 'local-path' }
  | { kind: 'failed'; error: string };

/** Kubernetes' findDeletablePlugin plus NewDeleter: by the provisioner annotation first, then by source. */
export function deleterFor(volume: KubeObject): Deleter {
  const spec = volumeSpec(volume);
  const provisionedBy = volume.metadata?.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
  if (provisionedBy) {
    if (provisionedBy === HOST_PATH_PLUGIN) {
      return spec.hostPath
        ? { kind: 'host-path', path: spec.hostPath.path ?? '' }
        : { kind: 'failed', error: `failed to create deleter for volume "${nameOf(volume)}": spec.PersistentVolumeSource.HostPath is nil` };
    }
    if (provisionedBy === NFS_PLUGIN) return { kind: 'failed', error: 'no deletable volume plugin matched' };
    if (provisionedBy === LOCAL_PATH_PROVISIONER) return { kind: 'local-path' };
    if (!provisionedBy.startsWith('kubernetes.io/')) return { kind: 'external' };
    if (!CSI_MIGRATION[provisionedBy]) return { kind: 'failed', error: `no volume plugin matched name: ${provisionedBy}` };
  }
  if (volume.metadata?.annotations?.[ANN_MIGRATED_TO] !== undefined || spec.csi != null) return { kind: 'external' };
  const prefix = `error getting deleter volume plugin for volume "${nameOf(volume)}"`;
  if (spec.hostPath) return { kind: 'host-path', path: spec.hostPath.path ?? '' };
  if (spec.nfs != null) return { kind: 'failed', error: `${prefix}: no deletable volume plugin matched` };
  return { kind: 'failed', error: `${prefix}: no volume plugin matched` };
}

/** The host-path deleter's rule (unanchored, as Kubernetes' regexp): only paths under some /tmp/. */
export function hostPathDeletable(path: string): string | undefined {
  return /\/tmp\/.+/.test(path) ? undefined : `host_path deleter only supports /tmp/.+ but received provided ${path}`;
}

/**
 * Why recycling the volume fails here. Kubernetes recycles host-path and nfs volumes with a
 * scrubber pod; that deprecated mechanism is not built, so those fail like a failed recycler.
 */
export function recycleFailure(volume: KubeObject): string {
  const spec = volumeSpec(volume);
  if (spec.hostPath || spec.nfs != null) return 'Recycle failed: the deprecated Recycle reclaim policy is not supported by this controller manager; use Retain or Delete';
  return 'No recycler plugin found for the volume!';
}

/** How a class's volumes are provisioned: by an external provisioner (named), in-tree, or not at all. */
export type Provisioner =
  | { kind: 'external'; name: string }
  | { kind: 'in-tree'; plugin: string }
  | { kind: 'failed'; error: string };

/** Kubernetes' findProvisionablePlugin for a class's provisioner field. */
export function provisionerFor(provisioner: string): Provisioner {
  const driver = migratedDriver(provisioner);
  if (driver) return { kind: 'external', name: driver };
  if (provisioner === HOST_PATH_PLUGIN || provisioner === LOCAL_PATH_PROVISIONER) return { kind: 'in-tree', plugin: provisioner };
  if (provisioner === NFS_PLUGIN) return { kind: 'failed', error: 'no provisionable volume plugin matched' };
  if (provisioner.startsWith('kubernetes.io/')) return { kind: 'failed', error: `no volume plugin matched name: ${provisioner}` };
  return { kind: 'external', name: provisioner };
}
