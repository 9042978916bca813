/** Pod and Node builders for the scheduler tests and benchmark. */
import type { Container, Node, NodeSelectorTerm, Pod, Taint, Toleration } from '../../src/daemons/scheduler/types.js';

export interface NodeSpec {
  cpu?: string;
  memory?: string;
  pods?: string;
  ephemeral?: string;
  labels?: Record<string, string>;
  taints?: Taint[];
  unschedulable?: boolean;
  ready?: boolean;
  extra?: Record<string, string>;
}

export function makeNode(name: string, s: NodeSpec = {}): Node {
  const alloc: Record<string, string> = { cpu: s.cpu ?? '4', memory: s.memory ?? '8Gi', pods: s.pods ?? '110', ...(s.ephemeral ? { 'ephemeral-storage': s.ephemeral } : {}), ...s.extra };
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name, uid: `uid-${name}`, labels: { 'kubernetes.io/hostname': name, ...s.labels } },
    spec: { ...(s.taints ? { taints: s.taints } : {}), ...(s.unschedulable ? { unschedulable: true } : {}) },
    status: { capacity: alloc, allocatable: alloc, conditions: [{ type: 'Ready', status: s.ready === false ? 'False' : 'True' }] },
  };
}

export interface PodSpecOpts {
  namespace?: string;
  cpu?: string;
  memory?: string;
  containers?: Container[];
  initContainers?: Container[];
  tolerations?: Toleration[];
  nodeSelector?: Record<string, string>;
  required?: NodeSelectorTerm[];
  hostPort?: number;
  owner?: string;
  schedulerName?: string;
  nodeName?: string;
}

export function makePod(name: string, s: PodSpecOpts = {}): Pod {
  const requests: Record<string, string> = {};
  if (s.cpu) requests.cpu = s.cpu;
  if (s.memory) requests.memory = s.memory;
  const container: Container = {
    name: 'app',
    ...(Object.keys(requests).length ? { resources: { requests } } : {}),
    ...(s.hostPort ? { ports: [{ containerPort: 80, hostPort: s.hostPort, protocol: 'TCP' }] } : {}),
  };
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: s.namespace ?? 'default', uid: `uid-${name}`,
      ...(s.owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: s.owner, uid: `uid-${s.owner}`, controller: true }] } : {}),
    },
    spec: {
      ...(s.schedulerName ? { schedulerName: s.schedulerName } : {}),
      ...(s.nodeName ? { nodeName: s.nodeName } : {}),
      containers: (s.containers ?? [container]).map((c) => ({ image: 'busybox', ...c })),
      ...(s.initContainers ? { initContainers: s.initContainers.map((c) => ({ image: 'busybox', ...c })) } : {}),
      ...(s.tolerations ? { tolerations: s.tolerations } : {}),
      ...(s.nodeSelector ? { nodeSelector: s.nodeSelector } : {}),
      ...(s.required ? { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: s.required } } } } : {}),
    },
  };
}
