/**
 * RuntimeBackend over CRI v1 (containerd and friends). A thin translation layer: our camelCase
 * TS shapes to the proto messages and back, nanosecond strings to milliseconds, enum names to
 * our lower-case states, and the proto3 zero-default trap closed (an unset pid mode becomes
 * CONTAINER, see runtime.ts).
 */
import type {
  CallOptions, ContainerConfig, ContainerStatsInfo, ContainerFilter, ContainerState, ContainerStatus, ContainerSummary,
  ExecRequest, AttachRequest, ExecSyncResult, FilesystemUsage, ImageAuth, ImageInfo, LinuxContainerResources, Mount,
  MountPropagation, NamespaceMode, NamespaceOptions, PodSandboxConfig, PodSandboxFilter,
  PodSandboxMetadata, PodSandboxStatus, PodSandboxSummary, RuntimeBackend, RuntimeStatusInfo,
  SandboxState, SeccompProfile, VersionInfo,
} from '../runtime.js';
import { CriClient, type CriCallOptions } from './cri-client.js';
import { normalizeImageName } from '../image-name.js';

export interface CriRuntimeOptions {
  /** `unix:///run/containerd/containerd.sock` (--container-runtime-endpoint). */
  readonly endpoint: string;
  /** --runtime-request-timeout in ms; default 2 minutes. */
  readonly requestTimeoutMs?: number;
}

type Str = Record<string, string>;
interface WireImage { id: string; repoTags: string[]; repoDigests: string[]; size: string; uid: { value: string } | null; username: string; pinned: boolean }
interface WireMeta { name: string; uid: string; namespace: string; attempt: number }
interface WireMount { containerPath: string; hostPath: string; readonly: boolean; selinuxRelabel: boolean; propagation: string }
interface WireSandbox { id: string; metadata: WireMeta | null; state: string; createdAt: string; labels: Str; annotations: Str; runtimeHandler: string }
interface WireSandboxStatus extends WireSandbox { network: { ip: string; additionalIps: { ip: string }[] } | null }
interface WireContainer { id: string; podSandboxId: string; metadata: { name: string; attempt: number } | null; image: { image: string } | null; imageRef: string; state: string; createdAt: string; labels: Str; annotations: Str }
interface WireContainerStatus extends WireContainer {
  startedAt: string; finishedAt: string; exitCode: number; reason: string; message: string; mounts: WireMount[]; logPath: string;
}

type WireU64 = { value: string } | null | undefined;
interface WireContainerStats {
  attributes: { id: string; metadata: { name: string } | null; labels: Str } | null;
  cpu: { timestamp: string; usageCoreNanoSeconds: WireU64; usageNanoCores: WireU64 } | null;
  memory: { timestamp: string; workingSetBytes: WireU64; availableBytes: WireU64; usageBytes: WireU64; rssBytes: WireU64; pageFaults: WireU64; majorPageFaults: WireU64 } | null;
  writableLayer: { timestamp: string; fsId: { mountpoint: string } | null; usedBytes: WireU64; inodesUsed: WireU64 } | null;
}

/** A wrapped uint64 (absent: undefined, which the Summary API leaves out). */
const u64 = (v: WireU64): number | undefined => (v ? Number(v.value) : undefined);

function containerStatsFromWire(s: WireContainerStats): ContainerStatsInfo {
  const m = s.memory;
  const w = s.writableLayer;
  return {
    id: s.attributes?.id ?? '', name: s.attributes?.metadata?.name ?? '', labels: s.attributes?.labels ?? {},
    cpuTimestamp: nsToMs(s.cpu?.timestamp), usageCoreNanoSeconds: u64(s.cpu?.usageCoreNanoSeconds), usageNanoCores: u64(s.cpu?.usageNanoCores),
    memoryTimestamp: nsToMs(m?.timestamp), workingSetBytes: u64(m?.workingSetBytes), availableBytes: u64(m?.availableBytes), usageBytes: u64(m?.usageBytes),
    rssBytes: u64(m?.rssBytes), pageFaults: u64(m?.pageFaults), majorPageFaults: u64(m?.majorPageFaults),
    ...(w ? { writableLayer: { timestamp: nsToMs(w.timestamp), mountpoint: w.fsId?.mountpoint ?? '', usedBytes: u64(w.usedBytes) ?? 0, inodesUsed: u64(w.inodesUsed) ?? 0 } } : {}),
  };
}

const NS_MODE: Record<NamespaceMode, string> = { pod: 'POD', container: 'CONTAINER', node: 'NODE', target: 'TARGET' };
const PROPAGATION: Record<MountPropagation, string> = {
  'private': 'PROPAGATION_PRIVATE', 'host-to-container': 'PROPAGATION_HOST_TO_CONTAINER', 'bidirectional': 'PROPAGATION_BIDIRECTIONAL',
};
const CONTAINER_STATE: Record<ContainerState, string> = {
  created: 'CONTAINER_CREATED', running: 'CONTAINER_RUNNING', exited: 'CONTAINER_EXITED', unknown: 'CONTAINER_UNKNOWN',
};

/** Nanoseconds (decimal string or number) to whole milliseconds. */
export function nsToMs(ns: string | number | undefined | null): number {
  if (ns === undefined || ns === null || ns === '' || ns === '0' || ns === 0) return 0;
  return Number(BigInt(ns) / 1_000_000n);
}

function namespaceOptions(o: NamespaceOptions | undefined): object {
  return {
    network: NS_MODE[o?.network ?? 'pod'],
    pid: NS_MODE[o?.pid ?? 'container'],
    ipc: NS_MODE[o?.ipc ?? 'pod'],
    targetId: o?.targetId ?? '',
  };
}

const int64 = (v: number | undefined): object | null => (v === undefined ? null : { value: String(v) });
const securityProfile = (p: SeccompProfile | undefined): object | null => (p ? { profileType: p.profileType, localhostRef: p.localhostRef ?? '' } : null);
function resourcesToWire(r: LinuxContainerResources): object {
  return {
    cpuPeriod: String(r.cpuPeriod ?? 0), cpuQuota: String(r.cpuQuota ?? 0), cpuShares: String(r.cpuShares ?? 0),
    memoryLimitInBytes: String(r.memoryLimitInBytes ?? 0), oomScoreAdj: String(r.oomScoreAdj ?? 0),
    cpusetCpus: r.cpusetCpus ?? '', cpusetMems: r.cpusetMems ?? '',
  };
}

export function sandboxConfigToWire(c: PodSandboxConfig): object {
  const sc = c.linux?.securityContext;
  return {
    metadata: { name: c.metadata.name, uid: c.metadata.uid, namespace: c.metadata.namespace, attempt: c.metadata.attempt ?? 0 },
    hostname: c.hostname ?? '',
    logDirectory: c.logDirectory ?? '',
    dnsConfig: c.dnsConfig ? { servers: c.dnsConfig.servers ?? [], searches: c.dnsConfig.searches ?? [], options: c.dnsConfig.options ?? [] } : null,
    portMappings: (c.portMappings ?? []).map((p) => ({ protocol: p.protocol ?? 'TCP', containerPort: p.containerPort, hostPort: p.hostPort ?? 0, hostIp: p.hostIp ?? '' })),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    linux: {
      cgroupParent: c.linux?.cgroupParent ?? '',
      sysctls: { ...c.linux?.sysctls },
      securityContext: {
        namespaceOptions: namespaceOptions(sc?.namespaceOptions),
        runAsUser: int64(sc?.runAsUser),
        runAsGroup: int64(sc?.runAsGroup),
        readonlyRootfs: sc?.readonlyRootfs ?? false,
        supplementalGroups: (sc?.supplementalGroups ?? []).map(String),
        privileged: sc?.privileged ?? false,
        seccomp: securityProfile(sc?.seccomp),
      },
    },
  };
}

function containerConfigToWire(c: ContainerConfig): object {
  const sc = c.linux?.securityContext;
  const r = c.linux?.resources;
  return {
    metadata: { name: c.metadata.name, attempt: c.metadata.attempt ?? 0 },
    image: { image: c.image },
    command: [...(c.command ?? [])],
    args: [...(c.args ?? [])],
    workingDir: c.workingDir ?? '',
    envs: (c.envs ?? []).map((e) => ({ key: e.key, value: e.value })),
    mounts: (c.mounts ?? []).map((m) => ({
      containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readonly ?? false,
      selinuxRelabel: m.selinuxRelabel ?? false, propagation: PROPAGATION[m.propagation ?? 'private'],
    })),
    devices: (c.devices ?? []).map((d) => ({ containerPath: d.containerPath, hostPath: d.hostPath, permissions: d.permissions })),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    logPath: c.logPath ?? '',
    stdin: c.stdin ?? false,
    stdinOnce: c.stdinOnce ?? false,
    tty: c.tty ?? false,
    linux: {
      resources: r ? resourcesToWire(r) : null,
      securityContext: {
        capabilities: sc?.capabilities ? { addCapabilities: [...(sc.capabilities.add ?? [])], dropCapabilities: [...(sc.capabilities.drop ?? [])] } : null,
        privileged: sc?.privileged ?? false,
        namespaceOptions: namespaceOptions(sc?.namespaceOptions),
        runAsUser: int64(sc?.runAsUser),
        runAsGroup: int64(sc?.runAsGroup),
        runAsUsername: sc?.runAsUsername ?? '',
        readonlyRootfs: sc?.readonlyRootfs ?? false,
        supplementalGroups: (sc?.supplementalGroups ?? []).map(String),
        noNewPrivs: sc?.noNewPrivs ?? false,
        maskedPaths: [...(sc?.maskedPaths ?? [])],
        readonlyPaths: [...(sc?.readonlyPaths ?? [])],
        seccomp: securityProfile(sc?.seccomp),
      },
    },
  };
}

const sandboxState = (s: string): SandboxState => (s === 'SANDBOX_READY' ? 'ready' : 'notready');
function containerState(s: string): ContainerState {
  switch (s) {
    case 'CONTAINER_CREATED': return 'created';
    case 'CONTAINER_RUNNING': return 'running';
    case 'CONTAINER_EXITED': return 'exited';
    default: return 'unknown';
  }
}
const meta = (m: WireMeta | null): PodSandboxMetadata => ({ name: m?.name ?? '', uid: m?.uid ?? '', namespace: m?.namespace ?? '', attempt: m?.attempt ?? 0 });
function mountFromWire(m: WireMount): Mount {
  const propagation: MountPropagation = m.propagation === 'PROPAGATION_BIDIRECTIONAL' ? 'bidirectional'
    : m.propagation === 'PROPAGATION_HOST_TO_CONTAINER' ? 'host-to-container' : 'private';
  return { containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readonly, selinuxRelabel: m.selinuxRelabel, propagation };
}
function imageFromWire(i: WireImage): ImageInfo {
  const base = { id: i.id, repoTags: i.repoTags, repoDigests: i.repoDigests, size: Number(i.size), username: i.username, pinned: i.pinned };
  return i.uid ? { ...base, uid: Number(i.uid.value) } : base;
}
function containerSummaryFromWire(c: WireContainer): ContainerSummary {
  return {
    id: c.id, podSandboxId: c.podSandboxId, metadata: { name: c.metadata?.name ?? '', attempt: c.metadata?.attempt ?? 0 },
    image: c.image?.image ?? '', imageRef: c.imageRef, state: containerState(c.state), createdAt: nsToMs(c.createdAt),
    labels: c.labels, annotations: c.annotations,
  };
}

export class CriRuntime implements RuntimeBackend {
  readonly name = 'cri';
  private readonly client: CriClient;

  constructor(readonly options: CriRuntimeOptions) {
    this.client = new CriClient({ endpoint: options.endpoint, defaultTimeoutMs: options.requestTimeoutMs ?? 120_000 });
  }

  private rt<T extends object>(method: string, req: object, opts?: CallOptions): Promise<T> {
    return this.client.call<T>('RuntimeService', method, req, opts as CriCallOptions | undefined);
  }
  private img<T extends object>(method: string, req: object, opts?: CallOptions): Promise<T> {
    return this.client.call<T>('ImageService', method, req, opts as CriCallOptions | undefined);
  }

  async version(opts?: CallOptions): Promise<VersionInfo> {
    const r = await this.rt<VersionInfo>('Version', { version: 'v1' }, opts);
    return { version: r.version, runtimeName: r.runtimeName, runtimeVersion: r.runtimeVersion, runtimeApiVersion: r.runtimeApiVersion };
  }

  async status(opts?: CallOptions): Promise<RuntimeStatusInfo> {
    const r = await this.rt<{ status: { conditions: RuntimeStatusInfo['conditions'] } | null }>('Status', { verbose: false }, opts);
    const conditions = (r.status?.conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message }));
    const cond = (t: string): boolean => conditions.some((c) => c.type === t && c.status);
    return { runtimeReady: cond('RuntimeReady'), networkReady: cond('NetworkReady'), conditions };
  }

  async updatePodCidr(podCidr: string, opts?: CallOptions): Promise<void> {
    await this.rt('UpdateRuntimeConfig', { runtimeConfig: { networkConfig: { podCidr } } }, opts);
  }

  async runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const r = await this.rt<{ podSandboxId: string }>('RunPodSandbox', { config: sandboxConfigToWire(config), runtimeHandler: config.runtimeHandler ?? '' }, opts);
    return r.podSandboxId;
  }
  async stopPodSandbox(id: string, opts?: CallOptions): Promise<void> { await this.rt('StopPodSandbox', { podSandboxId: id }, opts); }
  async removePodSandbox(id: string, opts?: CallOptions): Promise<void> { await this.rt('RemovePodSandbox', { podSandboxId: id }, opts); }

  async podSandboxStatus(id: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    const r = await this.rt<{ status: WireSandboxStatus | null }>('PodSandboxStatus', { podSandboxId: id, verbose: false }, opts);
    const s = r.status;
    if (!s) throw new Error(`PodSandboxStatus: runtime returned no status for ${id}`);
    return {
      id: s.id, metadata: meta(s.metadata), state: sandboxState(s.state), createdAt: nsToMs(s.createdAt),
      ip: s.network?.ip ?? '', additionalIps: (s.network?.additionalIps ?? []).map((p) => p.ip),
      labels: s.labels, annotations: s.annotations, runtimeHandler: s.runtimeHandler,
    };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandboxSummary[]> {
    const wf = filter ? {
      id: filter.id ?? '',
      state: filter.state ? { state: filter.state === 'ready' ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY' } : null,
      labelSelector: { ...filter.labelSelector },
    } : null;
    const r = await this.rt<{ items: WireSandbox[] }>('ListPodSandbox', { filter: wf }, opts);
    return r.items.map((s) => ({
      id: s.id, metadata: meta(s.metadata), state: sandboxState(s.state), createdAt: nsToMs(s.createdAt),
      labels: s.labels, annotations: s.annotations, runtimeHandler: s.runtimeHandler,
    }));
  }

  async createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const r = await this.rt<{ containerId: string }>('CreateContainer', {
      podSandboxId: sandboxId, config: containerConfigToWire(config), sandboxConfig: sandboxConfigToWire(sandboxConfig),
    }, opts);
    return r.containerId;
  }
  async startContainer(id: string, opts?: CallOptions): Promise<void> { await this.rt('StartContainer', { containerId: id }, opts); }

  async stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    // The runtime itself waits up to timeoutSeconds before killing: give the call that long on top.
    const timeoutMs = opts?.timeoutMs ?? ((this.options.requestTimeoutMs ?? 120_000) + Math.max(0, timeoutSeconds) * 1000);
    await this.rt('StopContainer', { containerId: id, timeout: String(Math.max(0, Math.floor(timeoutSeconds))) }, { ...opts, timeoutMs });
  }
  async removeContainer(id: string, opts?: CallOptions): Promise<void> { await this.rt('RemoveContainer', { containerId: id }, opts); }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<ContainerSummary[]> {
    const wf = filter ? {
      id: filter.id ?? '', podSandboxId: filter.podSandboxId ?? '',
      state: filter.state ? { state: CONTAINER_STATE[filter.state] } : null,
      labelSelector: { ...filter.labelSelector },
    } : null;
    const r = await this.rt<{ containers: WireContainer[] }>('ListContainers', { filter: wf }, opts);
    return r.containers.map(containerSummaryFromWire);
  }

  async containerStatus(id: string, opts?: CallOptions): Promise<ContainerStatus> {
    const r = await this.rt<{ status: WireContainerStatus | null }>('ContainerStatus', { containerId: id, verbose: false }, opts);
    const s = r.status;
    if (!s) throw new Error(`ContainerStatus: runtime returned no status for ${id}`);
    return {
      id: s.id, metadata: { name: s.metadata?.name ?? '', attempt: s.metadata?.attempt ?? 0 }, state: containerState(s.state),
      createdAt: nsToMs(s.createdAt), startedAt: nsToMs(s.startedAt), finishedAt: nsToMs(s.finishedAt),
      exitCode: s.exitCode, reason: s.reason, message: s.message, image: s.image?.image ?? '', imageRef: s.imageRef,
      labels: s.labels, annotations: s.annotations, mounts: s.mounts.map(mountFromWire), logPath: s.logPath,
    };
  }

  async updateContainerResources(id: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void> {
    await this.rt('UpdateContainerResources', { containerId: id, linux: resourcesToWire(resources) }, opts);
  }

  async reopenContainerLog(id: string, opts?: CallOptions): Promise<void> { await this.rt('ReopenContainerLog', { containerId: id }, opts); }

  async execSync(id: string, cmd: readonly string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResult> {
    // No request timeout of its own beyond the command's (like the kubelet): a 0 timeout runs until done.
    const timeoutMs = opts?.timeoutMs ?? (timeoutSeconds > 0 ? timeoutSeconds * 1000 + (this.options.requestTimeoutMs ?? 120_000) : 0);
    const r = await this.rt<{ stdout: Buffer; stderr: Buffer; exitCode: number }>('ExecSync',
      { containerId: id, cmd: [...cmd], timeout: String(Math.max(0, Math.floor(timeoutSeconds))) }, { ...opts, timeoutMs });
    return { stdout: Buffer.from(r.stdout), stderr: Buffer.from(r.stderr), exitCode: r.exitCode };
  }

  async exec(req: ExecRequest, opts?: CallOptions): Promise<string> {
    const r = await this.rt<{ url: string }>('Exec', {
      containerId: req.containerId, cmd: [...req.cmd], tty: req.tty ?? false, stdin: req.stdin ?? false,
      stdout: req.stdout ?? true, stderr: req.stderr ?? !req.tty,
    }, opts);
    return r.url;
  }
  async attach(req: AttachRequest, opts?: CallOptions): Promise<string> {
    const r = await this.rt<{ url: string }>('Attach', {
      containerId: req.containerId, tty: req.tty ?? false, stdin: req.stdin ?? false, stdout: req.stdout ?? true, stderr: req.stderr ?? !req.tty,
    }, opts);
    return r.url;
  }
  async portForward(sandboxId: string, ports: readonly number[], opts?: CallOptions): Promise<string> {
    const r = await this.rt<{ url: string }>('PortForward', { podSandboxId: sandboxId, port: [...ports] }, opts);
    return r.url;
  }

  async imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    const r = await this.img<{ image: WireImage | null }>('ImageStatus', { image: { image }, verbose: false }, opts);
    return r.image && r.image.id ? imageFromWire(r.image) : null;
  }
  async pullImage(image: string, auth?: ImageAuth, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const r = await this.img<{ imageRef: string }>('PullImage', {
      image: { image }, auth: auth ? { ...auth } : null, sandboxConfig: sandboxConfig ? sandboxConfigToWire(sandboxConfig) : null,
    }, { ...opts, timeoutMs: opts?.timeoutMs ?? 0 });
    return r.imageRef;
  }
  async listImages(filterImage?: string, opts?: CallOptions): Promise<ImageInfo[]> {
    const r = await this.img<{ images: WireImage[] }>('ListImages', { filter: filterImage ? { image: { image: filterImage } } : null }, opts);
    const images = r.images.map(imageFromWire);
    if (!filterImage) return images;
    // containerd 1.6 ignores the filter: apply it here so every runtime answers alike.
    const want = normalizeImageName(filterImage);
    return images.filter((i) => i.id === filterImage || i.repoTags.includes(want) || i.repoDigests.includes(filterImage));
  }
  async removeImage(image: string, opts?: CallOptions): Promise<void> { await this.img('RemoveImage', { image: { image } }, opts); }
  async imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]> {
    const r = await this.img<{ imageFilesystems: { timestamp: string; fsId: { mountpoint: string } | null; usedBytes: { value: string } | null; inodesUsed: { value: string } | null }[] }>('ImageFsInfo', {}, opts);
    return r.imageFilesystems.map((f) => ({
      timestamp: nsToMs(f.timestamp), mountpoint: f.fsId?.mountpoint ?? '',
      usedBytes: Number(f.usedBytes?.value ?? 0), inodesUsed: Number(f.inodesUsed?.value ?? 0),
    }));
  }

  async listContainerStats(filter?: { podSandboxId?: string; labelSelector?: Readonly<Record<string, string>> }, opts?: CallOptions): Promise<ContainerStatsInfo[]> {
    const wf = filter ? { id: '', podSandboxId: filter.podSandboxId ?? '', labelSelector: { ...filter.labelSelector } } : null;
    const r = await this.rt<{ stats: WireContainerStats[] }>('ListContainerStats', { filter: wf }, opts);
    return r.stats.map(containerStatsFromWire);
  }

  async close(): Promise<void> { this.client.close(); }
}
