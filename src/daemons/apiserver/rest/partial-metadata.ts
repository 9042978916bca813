/**
 * The metadata-only forms clients ask for with `Accept: ...;as=PartialObjectMetadata` (or
 * ...List), and Table rows carry by default: meta.k8s.io PartialObjectMetadata(List) in the
 * requested meta version (v1 unless asked otherwise).
 */
import type { KubeObject } from '../../../api/resources/types.js';

export function partialObject(obj: KubeObject, metaVersion = 'v1'): KubeObject {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${metaVersion}`, metadata: obj.metadata ?? {} };
}

export function partialList(items: readonly KubeObject[], metadata: Record<string, unknown>, metaVersion = 'v1'): KubeObject {
  return {
    kind: 'PartialObjectMetadataList', apiVersion: `meta.k8s.io/${metaVersion}`, metadata,
    items: items.map((o) => partialObject(o, metaVersion)),
  } as KubeObject;
}
