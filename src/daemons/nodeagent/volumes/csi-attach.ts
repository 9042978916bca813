/**
 * What the node agent reads of attaching, when the attach/detach controller attaches its CSI
 * volumes (--enable-controller-attach-detach, the default): whether a driver attaches (its
 * CSIDriver's spec.attachRequired; true without a CSIDriver object, as in Kubernetes) and the
 * publish context of an attached volume (its VolumeAttachment's status.attachmentMetadata once
 * status.attached). The volume names the node reports in status.volumesInUse are built here too.
 */
import { createHash } from 'node:crypto';
import type { RestClient } from '../../../client/rest-client.js';
import type { CsiNodeOptions } from './csi-node.js';
import { getOrUndefined } from './claims.js';

const DRIVERS = { group: 'storage.k8s.io', version: 'v1', resource: 'csidrivers' } as const;
const ATTACHMENTS = { group: 'storage.k8s.io', version: 'v1', resource: 'volumeattachments' } as const;
/** On the Node: its volumes are attached by the attach/detach controller. */
export const CONTROLLER_MANAGED_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';

export function csiVolumeName(driver: string, handle: string): string {
  return `kubernetes.io/csi/${driver}^${handle}`;
}


export function apiAttachments(client: RestClient, nodeName: string): NonNullable<CsiNodeOptions['attachments']> {
  return {
    async required(driver) {
      const d = await getOrUndefined(() => client.get(DRIVERS, driver));
      return (d?.spec as { attachRequired?: boolean } | undefined)?.attachRequired !== false;
    },
    async lookup(driver, handle) {
      const name = `csi-${createHash('sha256').update(`${handle}${driver}${nodeName}`).digest('hex')}`;
      const va = await getOrUndefined(() => client.get(ATTACHMENTS, name));
      const st = va?.status as { attached?: boolean; attachmentMetadata?: Record<string, string> } | undefined;
      return st?.attached ? (st.attachmentMetadata ?? {}) : undefined;
    },
  };
}
