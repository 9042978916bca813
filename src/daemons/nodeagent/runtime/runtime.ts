/**
 * The node agent's runtime backend contract: the Container Runtime Interface operations the
 * agent needs, in TypeScript terms. Two implementations: `cri/cri-runtime.ts` (CRI v1 over
 * gRPC, e.g. containerd) and `fake/fake-runtime.ts` (in memory, for simulated nodes and tests).
 *
 * Conventions shared by every implementation:
 * - Times are milliseconds since the Unix epoch (CRI carries nanoseconds; we drop the
 *   sub-millisecond part); 0 means "not happened".
 * - Durations given as `timeoutSeconds` are seconds, as in CRI.
 * - Every call accepts `CallOptions`: an AbortSignal and/or a timeout. Without a timeout the
 *   backend applies its default request timeout (`--runtime-request-timeout`), except for
 *   pullImage and the long-running exec family, which only end on their own terms or the signal.
 * - Failures are `RuntimeError` (see runtime-errors.ts) with a stable `code`, e.g. NOT_FOUND
 *   for an unknown sandbox or container id.
 * - Namespace options: an unset `pid` means 'container' (the container has its own PID
 *   namespace), unlike raw CRI where the proto3 zero value means 'pod'. Set pid: 'pod' to
 *   share the pod's PID namespace; network: 'node' for hostNetwork.
 * - Implementations are safe for concurrent calls; they keep no per-caller state.
 */

export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Overrides the backend's default request timeout for this call. */
  readonly timeoutMs?: number;
}

export type NamespaceMode = 'pod' | 'container' | 'node' | 'target';
export type SandboxState = 'ready' | 'notready';
export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';
export type PortProtocol = 'TCP' | 'UDP' | 'SCTP';
export type MountPropagation = 'private' | 'host-to-container' | 'bidirectional';

export interface VersionInfo {
  readonly version: string;
  readonly runtimeName: string;
  readonly runtimeVersion: string;
  readonly runtimeApiVersion: string;
}

export interface RuntimeCondition {
  readonly type: string;
  readonly status: boolean;
  readonly reason: string;
  readonly message: string;
}

export interface RuntimeStatusInfo {
  /** The RuntimeReady condition. */
  readonly runtimeReady: boolean;
  /** The NetworkReady condition. */
  readonly networkReady: boolean;
  readonly conditions: readonly RuntimeCondition[];
}

export interface NamespaceOptions {
  readonly network?: NamespaceMode;
  /** Unset means 'container' (see the module comment). */
  readonly pid?: NamespaceMode;
  readonly ipc?: NamespaceMode;
  readonly targetId?: string;
}

export interface PodSandboxMetadata {
  readonly name: string;
  readonly uid: string;
  readonly namespace: string;
  readonly attempt?: number;
}

export interface PortMapping {
  readonly protocol?: PortProtocol;
  readonly containerPort: number;
  readonly hostPort?: number;
  readonly hostIp?: string;
}

export interface DnsConfig {
  readonly servers?: readonly string[];
  readonly searches?: readonly string[];
  readonly options?: readonly string[];
}

/** CRI SecurityProfile; Localhost names the profile file on the node. */
export interface SeccompProfile {
  readonly profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  readonly localhostRef?: string;
}

export interface SandboxSecurityContext {
  readonly namespaceOptions?: NamespaceOptions;
  readonly seccomp?: SeccompProfile;
  readonly privileged?: boolean;
  readonly runAsUser?: number;
  readonly runAsGroup?: number;
  readonly readonlyRootfs?: boolean;
  readonly supplementalGroups?: readonly number[];
}

export interface PodSandboxConfig {
  readonly metadata: PodSandboxMetadata;
  readonly hostname?: string;
  /** Directory for the containers' logs, e.g. /var/log/pods/<ns>_<name>_<uid>. */
  readonly logDirectory?: string;
  readonly dnsConfig?: DnsConfig;
  readonly portMappings?: readonly PortMapping[];
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly linux?: {
    readonly cgroupParent?: string;
    readonly sysctls?: Readonly<Record<string, string>>;
    readonly securityContext?: SandboxSecurityContext;
  };
  /** CRI runtime handler (RuntimeClass handler); empty for the default. */
  readonly runtimeHandler?: string;
}

export interface Mount {
  readonly containerPath: string;
  readonly hostPath: string;
  readonly readonly?: boolean;
  readonly selinuxRelabel?: boolean;
  readonly propagation?: MountPropagation;
}

/** A host device node made available in the container (CRI Device). */
export interface Device {
  readonly containerPath: string;
  readonly hostPath: string;
  /** cgroup device permissions: r, w, m. */
  readonly permissions: string;
}

export interface LinuxContainerResources {
  readonly cpuPeriod?: number;
  readonly cpuQuota?: number;
  readonly cpuShares?: number;
  readonly memoryLimitInBytes?: number;
  readonly oomScoreAdj?: number;
  readonly cpusetCpus?: string;
  readonly cpusetMems?: string;
}

export interface ContainerSecurityContext {
  readonly namespaceOptions?: NamespaceOptions;
  readonly privileged?: boolean;
  readonly capabilities?: { readonly add?: readonly string[]; readonly drop?: readonly string[] };
  readonly runAsUser?: number;
  readonly runAsGroup?: number;
  readonly runAsUsername?: string;
  readonly readonlyRootfs?: boolean;
  readonly supplementalGroups?: readonly number[];
  readonly noNewPrivs?: boolean;
  readonly maskedPaths?: readonly string[];
  readonly readonlyPaths?: readonly string[];
  readonly seccomp?: SeccompProfile;
}

export interface ContainerConfig {
  readonly metadata: { readonly name: string; readonly attempt?: number };
  /** Image reference as given in the pod spec (or the resolved image id). */
  readonly image: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly workingDir?: string;
  readonly envs?: readonly { readonly key: string; readonly value: string }[];
  readonly mounts?: readonly Mount[];
  readonly devices?: readonly Device[];
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** Relative to the sandbox's logDirectory, e.g. `<container>/<restartCount>.log`. */
  readonly logPath?: string;
  readonly stdin?: boolean;
  readonly stdinOnce?: boolean;
  readonly tty?: boolean;
  readonly linux?: {
    readonly resources?: LinuxContainerResources;
    readonly securityContext?: ContainerSecurityContext;
  };
}

export interface PodSandboxStatus {
  readonly id: string;
  readonly metadata: PodSandboxMetadata;
  readonly state: SandboxState;
  readonly createdAt: number;
  /** Primary pod IP; '' when the sandbox has none (host network or not ready). */
  readonly ip: string;
  readonly additionalIps: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly runtimeHandler: string;
}

export interface PodSandboxSummary {
  readonly id: string;
  readonly metadata: PodSandboxMetadata;
  readonly state: SandboxState;
  readonly createdAt: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly runtimeHandler: string;
}

export interface PodSandboxFilter {
  readonly id?: string;
  readonly state?: SandboxState;
  readonly labelSelector?: Readonly<Record<string, string>>;
}

export interface ContainerSummary {
  readonly id: string;
  readonly podSandboxId: string;
  readonly metadata: { readonly name: string; readonly attempt: number };
  readonly image: string;
  readonly imageRef: string;
  readonly state: ContainerState;
  readonly createdAt: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface ContainerFilter {
  readonly id?: string;
  readonly state?: ContainerState;
  readonly podSandboxId?: string;
  readonly labelSelector?: Readonly<Record<string, string>>;
}

export interface ContainerStatus {
  readonly id: string;
  readonly metadata: { readonly name: string; readonly attempt: number };
  readonly state: ContainerState;
  readonly createdAt: number;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly exitCode: number;
  /** E.g. 'Completed' (exit 0), 'Error' (non-zero), 'OOMKilled'; '' while running. */
  readonly reason: string;
  readonly message: string;
  readonly image: string;
  readonly imageRef: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly mounts: readonly Mount[];
  /** Absolute path of the container's CRI-format log file ('' when none). */
  readonly logPath: string;
}

export interface ExecSyncResult {
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly exitCode: number;
}

export interface ExecRequest {
  readonly containerId: string;
  readonly cmd: readonly string[];
  readonly tty?: boolean;
  readonly stdin?: boolean;
  readonly stdout?: boolean;
  readonly stderr?: boolean;
}

export interface AttachRequest {
  readonly containerId: string;
  readonly tty?: boolean;
  readonly stdin?: boolean;
  readonly stdout?: boolean;
  readonly stderr?: boolean;
}

export interface ImageInfo {
  readonly id: string;
  readonly repoTags: readonly string[];
  readonly repoDigests: readonly string[];
  readonly size: number;
  readonly uid?: number;
  readonly username: string;
  readonly pinned: boolean;
}

export interface ImageAuth {
  readonly username?: string;
  readonly password?: string;
  readonly auth?: string;
  readonly serverAddress?: string;
  readonly identityToken?: string;
  readonly registryToken?: string;
}

export interface FilesystemUsage {
  readonly timestamp: number;
  readonly mountpoint: string;
  readonly usedBytes: number;
  readonly inodesUsed: number;
}

/** One container's figures from the runtime (CRI ListContainerStats); absent figures are undefined. */
export interface ContainerStatsInfo {
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Milliseconds since the epoch of the CPU sample. */
  readonly cpuTimestamp: number;
  readonly usageCoreNanoSeconds?: number;
  readonly usageNanoCores?: number;
  readonly memoryTimestamp: number;
  readonly workingSetBytes?: number;
  readonly availableBytes?: number;
  readonly usageBytes?: number;
  readonly rssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
  readonly writableLayer?: FilesystemUsage;
}

export interface RuntimeBackend {
  /** The backend kind, 'cri' or 'fake'; the runtime's own name and version come from version(). */
  readonly name: string;

  version(opts?: CallOptions): Promise<VersionInfo>;
  status(opts?: CallOptions): Promise<RuntimeStatusInfo>;
  /** Tells the runtime the node's pod CIDR (used by some network plugins). */
  updatePodCidr(podCidr: string, opts?: CallOptions): Promise<void>;

  runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string>;
  /** Stops every container of the sandbox and tears down its network. Idempotent. */
  stopPodSandbox(id: string, opts?: CallOptions): Promise<void>;
  /** Removes the sandbox and its containers. */
  removePodSandbox(id: string, opts?: CallOptions): Promise<void>;
  podSandboxStatus(id: string, opts?: CallOptions): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandboxSummary[]>;

  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string>;
  startContainer(id: string, opts?: CallOptions): Promise<void>;
  /** Sends the stop signal, then kills after `timeoutSeconds`. */
  stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  removeContainer(id: string, opts?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<ContainerSummary[]>;
  containerStatus(id: string, opts?: CallOptions): Promise<ContainerStatus>;
  /** Changes a running container's resources (the CPU manager's cpusets); optional for backends without cgroups. */
  updateContainerResources?(id: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void>;
  /** Makes the runtime reopen the container's log file (after rotation moved it away). */
  reopenContainerLog(id: string, opts?: CallOptions): Promise<void>;

  /** Runs a command to completion; `timeoutSeconds` 0 means no limit. */
  execSync(id: string, cmd: readonly string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResult>;
  /** The following return a single-use streaming URL served by the runtime. */
  exec(req: ExecRequest, opts?: CallOptions): Promise<string>;
  attach(req: AttachRequest, opts?: CallOptions): Promise<string>;
  portForward(sandboxId: string, ports: readonly number[], opts?: CallOptions): Promise<string>;

  /** The image if present, null if the runtime does not have it. */
  imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null>;
  /** Pulls and returns the image reference (id or digest). */
  pullImage(image: string, auth?: ImageAuth, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string>;
  listImages(filterImage?: string, opts?: CallOptions): Promise<ImageInfo[]>;
  removeImage(image: string, opts?: CallOptions): Promise<void>;
  imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]>;
  /** CRI ListContainerStats: figures of running containers (optional: a backend without it leaves stats to cgroups). */
  listContainerStats?(filter?: { podSandboxId?: string; labelSelector?: Readonly<Record<string, string>> }, opts?: CallOptions): Promise<ContainerStatsInfo[]>;

  /** Releases connections and timers; later calls fail with UNAVAILABLE. */
  close(): Promise<void>;
}
