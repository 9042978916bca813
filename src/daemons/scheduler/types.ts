/**
 * Typed views of the Pod and Node fields the scheduler reads. They are read-only projections
 * of the informers' cached objects (which must never be modified), not full API types.
 */
import type { KubeObject, OwnerReference } from '../../api/resources/types.js';

export type ResourceList = Record<string, string | number>;

export interface ContainerPort { containerPort?: number; hostPort?: number; hostIP?: string; protocol?: string }

export interface Container {
  name?: string;
  resources?: { requests?: ResourceList; limits?: ResourceList };
  ports?: ContainerPort[];
  /** 'Always' on an init container makes it a sidecar (restartable init container). */
  restartPolicy?: string;
}

import type { NodeSelectorTerm, Taint, Toleration } from '../../api/resources/core/node-placement.js';
export type { NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration } from '../../api/resources/core/node-placement.js';
export interface PreferredSchedulingTerm { weight: number; preference: NodeSelectorTerm }

export interface PodSpec {
  nodeName?: string;
  schedulerName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  containers?: Container[];
  initContainers?: Container[];
  overhead?: ResourceList;
  priority?: number;
  affinity?: {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
      preferredDuringSchedulingIgnoredDuringExecution?: PreferredSchedulingTerm[];
    };
  };
}

export interface Pod extends KubeObject { spec?: PodSpec; status?: { phase?: string } }

export interface NodeCondition { type: string; status: string }

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: Taint[] };
  status?: { allocatable?: ResourceList; capacity?: ResourceList; conditions?: NodeCondition[] };
}

export function asPod(obj: KubeObject): Pod { return obj as Pod; }
export function asNode(obj: KubeObject): Node { return obj as Node; }

/** `namespace/name`, the queue and cache key of a pod. */
export function podKey(pod: KubeObject): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/** The managing controller's ownerReference (controller: true), if any. */
export function controllerOf(pod: KubeObject): OwnerReference | undefined {
  return pod.metadata?.ownerReferences?.find((r) => r.controller === true);
}
