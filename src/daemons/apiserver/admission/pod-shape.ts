/** The parts of a pod the admission plugins here read, loosely typed (objects arrive as decoded JSON). */
import type { KubeObject } from '../../../api/resources/types.js';

export interface SecurityContextShape {
  privileged?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  seLinuxOptions?: Record<string, unknown>;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  procMount?: string;
  seccompProfile?: { type?: string; localhostProfile?: string };
  appArmorProfile?: { type?: string; localhostProfile?: string };
  windowsOptions?: { hostProcess?: boolean };
  supplementalGroups?: number[];
  fsGroup?: number;
  sysctls?: Array<{ name: string; value: string }>;
}

export interface ContainerShape {
  name?: string;
  image?: string;
  securityContext?: SecurityContextShape;
  ports?: Array<{ hostPort?: number; containerPort?: number }>;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}

export interface TolerationShape {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export interface PodSpecShape {
  containers?: ContainerShape[];
  initContainers?: ContainerShape[];
  ephemeralContainers?: ContainerShape[];
  securityContext?: SecurityContextShape;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  volumes?: Array<Record<string, unknown> & { name?: string }>;
  nodeSelector?: Record<string, string>;
  tolerations?: TolerationShape[];
  affinity?: { podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: Array<{ topologyKey?: string }> } };
  runtimeClassName?: string;
  os?: { name?: string };
}

export const podSpec = (o: KubeObject | undefined): PodSpecShape => ((o?.spec ?? {}) as PodSpecShape);

/** Init, regular and ephemeral containers, in that order. */
export function allContainers(spec: PodSpecShape): ContainerShape[] {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
}
