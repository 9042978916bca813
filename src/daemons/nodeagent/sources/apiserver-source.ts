/**
 * The API server source: pods bound to this node (field selector spec.nodeName=<node>),
 * through a shared informer. Mirror pods (our own reflections of static pods) are not
 * desired pods and are left out; mirror-pods.ts reads them from the same informer.
 */
import type { KubeObject } from '../../../api/resources/types.js';
import { deletedObject, type SharedIndexInformer } from '../../../client/informer.js';
import type { SharedInformerFactory } from '../../../client/informer-factory.js';
import type { PodSet } from '../pod-set.js';
import { isMirrorPod, type Pod } from '../pod-types.js';

export function podInformer(factory: SharedInformerFactory, nodeName: string): SharedIndexInformer {
  return factory.informerFor({ group: '', version: 'v1', resource: 'pods', fieldSelector: `spec.nodeName=${nodeName}` });
}

export function attachApiserverSource(informer: SharedIndexInformer, podSet: PodSet): void {
  const put = (o: KubeObject): void => {
    const p = o as Pod;
    if (isMirrorPod(p) || !p.metadata?.uid) return;
    podSet.upsert('api', p);
  };
  informer.addEventHandler({
    onAdd: put,
    onUpdate: (_old, obj) => put(obj),
    onDelete: (obj) => {
      const p = deletedObject(obj) as Pod;
      if (p.metadata?.uid) podSet.remove('api', p.metadata.uid);
    },
  });
}
