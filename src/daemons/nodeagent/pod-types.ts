/**
 * The parts of core/v1 Pod the node agent reads and writes, as loose structural types: pods
 * arrive from the API server, files, URLs and our own endpoint, so every field is optional
 * and readers default it.
 */
import type { KubeObject } from '../../api/resources/types.js';

export type Dict = Record<string, unknown>;

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string; apiVersion?: string };
    resourceFieldRef?: { containerName?: string; resource: string; divisor?: string | number };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
  };
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

export interface ExecAction { command?: string[] }
export interface HttpGetAction { path?: string; port: number | string; host?: string; scheme?: string; httpHeaders?: { name: string; value: string }[] }
export interface TcpSocketAction { port: number | string; host?: string }
export interface GrpcAction { port: number; service?: string }

export interface Probe {
  exec?: ExecAction;
  httpGet?: HttpGetAction;
  tcpSocket?: TcpSocketAction;
  grpc?: GrpcAction;
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface LifecycleHandler { exec?: ExecAction; httpGet?: HttpGetAction; tcpSocket?: TcpSocketAction; sleep?: { seconds: number } }

export interface ContainerPort { name?: string; containerPort: number; hostPort?: number; hostIP?: string; protocol?: string }

export interface VolumeMount { name: string; mountPath: string; readOnly?: boolean; subPath?: string; subPathExpr?: string; mountPropagation?: string }
export interface VolumeDevice { name: string; devicePath: string }

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  ports?: ContainerPort[];
  volumeMounts?: VolumeMount[];
  volumeDevices?: VolumeDevice[];
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  imagePullPolicy?: string;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { postStart?: LifecycleHandler; preStop?: LifecycleHandler };
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  restartPolicy?: string;
  securityContext?: { privileged?: boolean; runAsUser?: number; runAsGroup?: number; readOnlyRootFilesystem?: boolean; capabilities?: { add?: string[]; drop?: string[] } };
}

/** A debugging container added to a running pod (pods/ephemeralcontainers); never restarted. */
export interface EphemeralContainer extends Container {
  /** The container whose process namespace it joins (when the pod shares none). */
  targetContainerName?: string;
}

export interface Volume extends Dict { name: string }

export interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  ephemeralContainers?: EphemeralContainer[];
  volumes?: Volume[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  dnsPolicy?: string;
  dnsConfig?: { nameservers?: string[]; searches?: string[]; options?: { name: string; value?: string }[] };
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  hostname?: string;
  subdomain?: string;
  nodeName?: string;
  serviceAccountName?: string;
  shareProcessNamespace?: boolean;
  priority?: number;
  imagePullSecrets?: { name?: string }[];
  tolerations?: Dict[];
  securityContext?: Dict;
}

export interface ContainerStateV1 {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode: number; signal?: number; reason?: string; message?: string; startedAt?: string; finishedAt?: string; containerID?: string };
}

export interface ContainerStatusV1 {
  name: string;
  state: ContainerStateV1;
  lastState: ContainerStateV1;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
}

export interface PodCondition { type: string; status: string; lastProbeTime?: string | null; lastTransitionTime?: string; reason?: string; message?: string }

export interface PodStatusV1 {
  phase?: string;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatusV1[];
  containerStatuses?: ContainerStatusV1[];
  ephemeralContainerStatuses?: ContainerStatusV1[];
  qosClass?: string;
}

export interface Pod extends KubeObject {
  spec?: PodSpec;
  status?: PodStatusV1;
}

/** Annotations Kubernetes puts on pods that do not come from the API server. */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';

export function podKey(p: Pod): string {
  return `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;
}

export function podUid(p: Pod): string {
  return p.metadata?.uid ?? '';
}

export function isStaticPod(p: Pod): boolean {
  const src = p.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return src !== undefined && src !== 'api';
}

export function isMirrorPod(p: Pod): boolean {
  return p.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}

/** Kubernetes `Time`: RFC 3339 with whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Kubernetes `MicroTime`: RFC 3339 with six fraction digits. */
export function kubeMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d+)Z$/, (_m, f: string) => `.${f.padEnd(6, '0').slice(0, 6)}Z`);
}

