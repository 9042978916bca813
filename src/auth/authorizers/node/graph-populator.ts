/**
 * Keeps a NodeGraph current from the object store, as Kubernetes' graph populator does from
 * informers: pods (every namespace), persistent volumes and volume attachments. Each event
 * changes only the object it is about; a relist (start, or after the watch fell behind)
 * replaces that resource's part of the graph.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import type { NodeGraph } from './graph.js';
import { ResourceFollower } from '../../../storage/resource-follower.js';

const nodeNameOf = (o: KubeObject): string => {
  const spec = o.spec as { nodeName?: unknown } | undefined;
  return typeof spec?.nodeName === 'string' ? spec.nodeName : '';
};

export interface GraphPopulator {
  /** Settles when every resource has been listed once. */
  readonly synced: Promise<void>;
  stop(): void;
}

export function populateGraph(graph: NodeGraph, store: ObjectStore, log: Logger): GraphPopulator {
  const followers = [
    new ResourceFollower(store, '', 'pods', {
      replace: (items) => graph.replacePods(items),
      upsert: (pod, old) => {
        // A bound pod's node and references do not change; its status updates are the common case.
        if (old && nodeNameOf(old) === nodeNameOf(pod) && old.metadata?.uid === pod.metadata?.uid && sameSpec(old, pod)) return;
        graph.setPod(pod);
      },
      remove: (pod) => graph.deletePod(pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''),
    }, log),
    new ResourceFollower(store, '', 'persistentvolumes', {
      replace: (items) => graph.replacePVs(items),
      upsert: (pv) => graph.setPV(pv),
      remove: (pv) => graph.deletePV(pv.metadata?.name ?? ''),
    }, log),
    new ResourceFollower(store, 'storage.k8s.io', 'volumeattachments', {
      replace: (items) => graph.replaceVolumeAttachments(items.map((a) => ({ name: a.metadata?.name ?? '', node: nodeNameOf(a) }))),
      upsert: (a) => graph.setVolumeAttachment(a.metadata?.name ?? '', nodeNameOf(a)),
      remove: (a) => graph.deleteVolumeAttachment(a.metadata?.name ?? ''),
    }, log),
  ];
  return {
    synced: Promise.all(followers.map((f) => f.ready)).then(() => undefined),
    stop: () => { for (const f of followers) f.stop(); },
  };
}

/**
 * Whether the parts of the spec the graph reads are the same. Most are immutable once a pod
 * exists, but ephemeral containers can be added, and their env may name secrets and config maps.
 */
function sameSpec(a: KubeObject, b: KubeObject): boolean {
  const ea = (a.spec as { ephemeralContainers?: unknown } | undefined)?.ephemeralContainers;
  const eb = (b.spec as { ephemeralContainers?: unknown } | undefined)?.ephemeralContainers;
  return ea === eb || JSON.stringify(ea) === JSON.stringify(eb);
}
