/**
 * DefaultStorageClass: a PersistentVolumeClaim created without `storageClassName` (and without
 * the beta storage-class annotation) gets the cluster's default StorageClass, the one annotated
 * `storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation); with several,
 * the newest, as Kubernetes 1.26 and later. An explicit "" keeps the claim classless.
 */
import type { KubeObject } from '../../../api/resources/types.js';
import type { AdmissionContext, AdmissionPlugin } from './types.js';

const DEFAULT_ANNOTATIONS = ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class'];
const BETA_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

const isDefault = (sc: KubeObject): boolean => DEFAULT_ANNOTATIONS.some((a) => sc.metadata?.annotations?.[a] === 'true');

/** The newest default class (then the first name), if any. */
export function defaultClass(classes: readonly KubeObject[]): KubeObject | undefined {
  return classes.filter(isDefault).sort((a, b) =>
    String(b.metadata?.creationTimestamp ?? '').localeCompare(String(a.metadata?.creationTimestamp ?? ''))
    || String(a.metadata?.name ?? '').localeCompare(String(b.metadata?.name ?? '')))[0];
}

export function defaultStorageClass(ctx: AdmissionContext): AdmissionPlugin {
  return {
    name: 'DefaultStorageClass',
    handles: (op, def, sub) => op === 'CREATE' && sub === '' && def.group === '' && def.plural === 'persistentvolumeclaims',
    async admit(a) {
      const pvc = a.object;
      const spec = pvc?.spec as Record<string, unknown> | undefined;
      if (!pvc || !spec || spec.storageClassName !== undefined && spec.storageClassName !== null) return;
      if (pvc.metadata?.annotations?.[BETA_CLASS_ANNOTATION] !== undefined) return;
      const classes = await ctx.store.list({ resource: 'storageclasses', group: 'storage.k8s.io', namespace: '', resourceVersion: '0' });
      const chosen = defaultClass(classes.items);
      if (chosen?.metadata?.name) spec.storageClassName = chosen.metadata.name;
    },
  };
}
