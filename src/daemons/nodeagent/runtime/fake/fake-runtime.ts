/**
 * An in-memory RuntimeBackend for simulated nodes and for tests without containerd. Sandboxes
 * get IPs from a private range; containers move CREATED → RUNNING → EXITED with timestamps,
 * exit codes and reasons like containerd's; their output goes to the CRI-format log file the
 * caller names; behaviour is scripted by image, command, env and annotations
 * (see fake-behaviour.ts). Cheap enough for thousands of pods in one process: one timer per
 * container that exits on its own, no I/O unless a log path is given.
 * Contract: state changes happen synchronously inside each call, so concurrent callers always
 * see a consistent store; timers are unref'd and cleared by close().
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import type {
  AttachRequest, CallOptions, ContainerConfig, ContainerFilter, ContainerStatus, ContainerSummary, ExecRequest,
  ExecSyncResult, FilesystemUsage, ImageInfo, PodSandboxConfig, PodSandboxFilter, PodSandboxStatus,
  PodSandboxSummary, RuntimeBackend, RuntimeStatusInfo, VersionInfo,
} from '../runtime.js';
import { RuntimeError } from '../runtime-errors.js';
import { behaviourOf, fakeExec, type FakeBehaviour, type FakeContainerView } from './fake-behaviour.js';
import { FakeImageStore } from './fake-images.js';
import { FakeStreamServer, type StreamSet } from './fake-stream-server.js';
import { FakeLogWriter } from './fake-log-writer.js';
import { Ipv4Pool } from './ip-pool.js';

export interface FakeRuntimeOptions {
  /** Range for sandbox IPs; default 10.244.0.0/16 (.0 and .1 are never handed out). */
  readonly podCidr?: string;
  /** IP reported for host-network sandboxes; default 127.0.0.1. */
  readonly nodeIp?: string;
  /** Images present from the start; default the two busybox test images. */
  readonly images?: readonly string[];
  /** Which normalized image names a pull succeeds for; default see fake-images.ts. */
  readonly pullable?: (normalizedImage: string) => boolean;
  /** Default run time of containers scripted to exit; default 50 ms. */
  readonly defaultRunMs?: number;
  readonly logger?: Logger;
}

interface Sandbox {
  readonly id: string;
  readonly config: PodSandboxConfig;
  state: 'ready' | 'notready';
  readonly createdAt: number;
  readonly ip: string;
  readonly key: string;
}

interface Container {
  readonly id: string;
  readonly sandboxId: string;
  readonly config: ContainerConfig;
  readonly view: FakeContainerView;
  readonly behaviour: FakeBehaviour;
  readonly imageRef: string;
  readonly key: string;
  state: 'created' | 'running' | 'exited';
  readonly createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  logPath: string;
  log?: FakeLogWriter;
  timer?: NodeJS.Timeout;
}

const newId = (): string => randomBytes(32).toString('hex');

function matches(labels: Readonly<Record<string, string>>, selector: Readonly<Record<string, string>> | undefined): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function check(signal: AbortSignal | undefined, op: string): void {
  if (signal?.aborted) throw new RuntimeError('CANCELLED', op, 'aborted');
}

/** The streams a runtime's server waits for besides `error`, as kubectl opens them. */
function expectedStreams(r: { tty?: boolean; stdin?: boolean; stdout?: boolean; stderr?: boolean }): string[] {
  return [
    ...(r.stdin ? ['stdin'] : []), ...(r.stdout ? ['stdout'] : []),
    ...(r.stderr && !r.tty ? ['stderr'] : []), ...(r.tty ? ['resize'] : []),
  ];
}

export class FakeRuntime implements RuntimeBackend {
  private streamServer: FakeStreamServer | undefined;
  readonly name = 'fake';
  private readonly sandboxes = new Map<string, Sandbox>();
  private readonly containers = new Map<string, Container>();
  /** Container ids per sandbox id, so per-pod operations do not scan every container. */
  private readonly bySandbox = new Map<string, Set<string>>();
  private readonly names = new Set<string>();
  private readonly images: FakeImageStore;
  private readonly logger: Logger;
  private readonly ips: Ipv4Pool;
  private closed = false;

  constructor(readonly options: FakeRuntimeOptions = {}) {
    this.logger = options.logger ?? pino({ level: 'silent' });
    this.images = new FakeImageStore(options.images ?? ['localhost/pause:busybox', 'localhost/busybox:latest'], options.pullable);
    this.ips = new Ipv4Pool(options.podCidr ?? '10.244.0.0/16');
  }

  private alive(op: string, opts?: CallOptions): void {
    if (this.closed) throw new RuntimeError('UNAVAILABLE', op, 'fake runtime is closed');
    check(opts?.signal, op);
  }

  private sandbox(id: string, op: string): Sandbox {
    const s = this.sandboxes.get(id);
    if (!s) throw new RuntimeError('NOT_FOUND', op, `an error occurred when try to find sandbox "${id}": not found`);
    return s;
  }

  private container(id: string, op: string): Container {
    const c = this.containers.get(id);
    if (!c) throw new RuntimeError('NOT_FOUND', op, `an error occurred when try to find container "${id}": not found`);
    return c;
  }

  private containersOf(sandboxId: string): Container[] {
    const ids = this.bySandbox.get(sandboxId);
    if (!ids) return [];
    const out: Container[] = [];
    for (const id of ids) {
      const c = this.containers.get(id);
      if (c) out.push(c);
    }
    return out;
  }

  private finish(c: Container, exitCode: number, reason?: string): void {
    if (c.state !== 'running') return;
    if (c.timer) { clearTimeout(c.timer); c.timer = undefined; }
    c.state = 'exited';
    c.finishedAt = Date.now();
    c.exitCode = exitCode;
    c.reason = reason ?? (exitCode === 0 ? 'Completed' : 'Error');
  }

  async version(opts?: CallOptions): Promise<VersionInfo> {
    this.alive('Version', opts);
    return { version: '0.1.0', runtimeName: 'fake', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }

  async status(opts?: CallOptions): Promise<RuntimeStatusInfo> {
    this.alive('Status', opts);
    const conditions = [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ];
    return { runtimeReady: true, networkReady: true, conditions };
  }

  async updatePodCidr(_podCidr: string, opts?: CallOptions): Promise<void> { this.alive('UpdateRuntimeConfig', opts); }

  async runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    this.alive('RunPodSandbox', opts);
    const m = config.metadata;
    const key = `sandbox/${m.name}_${m.namespace}_${m.uid}_${m.attempt ?? 0}`;
    if (this.names.has(key)) throw new RuntimeError('ALREADY_EXISTS', 'RunPodSandbox', `sandbox name "${key}" is reserved`);
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 'node';
    const ip = hostNetwork ? (this.options.nodeIp ?? '127.0.0.1') : this.ips.allocate();
    const id = newId();
    this.names.add(key);
    this.sandboxes.set(id, { id, config, state: 'ready', createdAt: Date.now(), ip, key });
    return id;
  }

  async stopPodSandbox(id: string, opts?: CallOptions): Promise<void> {
    this.alive('StopPodSandbox', opts);
    const s = this.sandbox(id, 'StopPodSandbox');
    for (const c of this.containersOf(id)) this.finish(c, 137);
    s.state = 'notready';
  }

  async removePodSandbox(id: string, opts?: CallOptions): Promise<void> {
    this.alive('RemovePodSandbox', opts);
    const s = this.sandboxes.get(id);
    if (!s) return; // idempotent, as containerd
    for (const c of this.containersOf(id)) this.dropContainer(c);
    this.sandboxes.delete(id);
    this.bySandbox.delete(id);
    this.names.delete(s.key);
    const hostNetwork = s.config.linux?.securityContext?.namespaceOptions?.network === 'node';
    if (!hostNetwork) this.ips.release(s.ip);
  }

  async podSandboxStatus(id: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    this.alive('PodSandboxStatus', opts);
    const s = this.sandbox(id, 'PodSandboxStatus');
    return {
      id, metadata: { ...s.config.metadata, attempt: s.config.metadata.attempt ?? 0 }, state: s.state, createdAt: s.createdAt,
      ip: s.ip, additionalIps: [], labels: { ...s.config.labels }, annotations: { ...s.config.annotations },
      runtimeHandler: s.config.runtimeHandler ?? '',
    };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandboxSummary[]> {
    this.alive('ListPodSandbox', opts);
    const out: PodSandboxSummary[] = [];
    for (const s of this.sandboxes.values()) {
      if (filter?.id && s.id !== filter.id) continue;
      if (filter?.state && s.state !== filter.state) continue;
      if (!matches(s.config.labels ?? {}, filter?.labelSelector)) continue;
      out.push({
        id: s.id, metadata: { ...s.config.metadata, attempt: s.config.metadata.attempt ?? 0 }, state: s.state,
        createdAt: s.createdAt, labels: { ...s.config.labels }, annotations: { ...s.config.annotations },
        runtimeHandler: s.config.runtimeHandler ?? '',
      });
    }
    return out;
  }

  async createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    this.alive('CreateContainer', opts);
    const s = this.sandbox(sandboxId, 'CreateContainer');
    if (s.state !== 'ready') throw new RuntimeError('FAILED_PRECONDITION', 'CreateContainer', `sandbox ${sandboxId} is not ready`);
    const image = this.images.get(config.image);
    if (!image) throw new RuntimeError('NOT_FOUND', 'CreateContainer', `failed to get image "${config.image}": not found`);
    const key = `${sandboxId}/${config.metadata.name}_${config.metadata.attempt ?? 0}`;
    if (this.names.has(key)) throw new RuntimeError('ALREADY_EXISTS', 'CreateContainer', `container name "${key}" is reserved`);
    const env: Record<string, string> = {};
    for (const e of config.envs ?? []) env[e.key] = e.value;
    const view: FakeContainerView = {
      image: config.image, command: config.command ?? [], args: config.args ?? [], env,
      annotations: config.annotations ?? {}, hostname: sandboxConfig.hostname || s.config.hostname || s.config.metadata.name,
    };
    const id = newId();
    const logDir = s.config.logDirectory ?? sandboxConfig.logDirectory;
    const logPath = config.logPath && logDir ? join(logDir, config.logPath) : '';
    this.names.add(key);
    let ids = this.bySandbox.get(sandboxId);
    if (!ids) this.bySandbox.set(sandboxId, ids = new Set());
    ids.add(id);
    this.containers.set(id, {
      id, sandboxId, config, view, behaviour: behaviourOf(view, this.options.defaultRunMs ?? 50), imageRef: image.id, key,
      state: 'created', createdAt: Date.now(), startedAt: 0, finishedAt: 0, exitCode: 0, reason: '', logPath,
    });
    return id;
  }

  async startContainer(id: string, opts?: CallOptions): Promise<void> {
    this.alive('StartContainer', opts);
    const c = this.container(id, 'StartContainer');
    if (c.state !== 'created') throw new RuntimeError('FAILED_PRECONDITION', 'StartContainer', `container is in ${c.state.toUpperCase()} state`);
    if (this.sandbox(c.sandboxId, 'StartContainer').state !== 'ready') {
      throw new RuntimeError('FAILED_PRECONDITION', 'StartContainer', `sandbox ${c.sandboxId} is not ready`);
    }
    c.state = 'running';
    c.startedAt = Date.now();
    const b = c.behaviour;
    if (c.logPath) {
      c.log = new FakeLogWriter(c.logPath, this.logger);
      if (b.stdout) c.log.write('stdout', b.stdout);
      if (b.stderr) c.log.write('stderr', b.stderr);
    }
    if (b.exitAfterMs !== undefined) {
      c.timer = setTimeout(() => this.finish(c, b.exitCode, b.oom ? 'OOMKilled' : undefined), b.exitAfterMs);
      c.timer.unref();
    }
  }

  async stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    this.alive('StopContainer', opts);
    const c = this.container(id, 'StopContainer');
    if (c.state !== 'running') return;
    if (!c.behaviour.ignoreSigterm) { this.finish(c, 143); return; }
    // Ignores SIGTERM: killed once the grace period is over (or at once on abort, like a cancelled call).
    const ms = Math.max(0, timeoutSeconds) * 1000;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      opts?.signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    this.finish(c, 137);
  }

  private dropContainer(c: Container): void {
    this.finish(c, 137);
    this.containers.delete(c.id);
    this.bySandbox.get(c.sandboxId)?.delete(c.id);
    this.names.delete(c.key);
  }

  async removeContainer(id: string, opts?: CallOptions): Promise<void> {
    this.alive('RemoveContainer', opts);
    const c = this.containers.get(id);
    if (c) this.dropContainer(c);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<ContainerSummary[]> {
    this.alive('ListContainers', opts);
    const out: ContainerSummary[] = [];
    const candidates = filter?.podSandboxId ? this.containersOf(filter.podSandboxId) : this.containers.values();
    for (const c of candidates) {
      if (filter?.id && c.id !== filter.id) continue;
      if (filter?.podSandboxId && c.sandboxId !== filter.podSandboxId) continue;
      if (filter?.state && c.state !== filter.state) continue;
      if (!matches(c.config.labels ?? {}, filter?.labelSelector)) continue;
      out.push({
        id: c.id, podSandboxId: c.sandboxId, metadata: { name: c.config.metadata.name, attempt: c.config.metadata.attempt ?? 0 },
        image: c.config.image, imageRef: c.imageRef, state: c.state, createdAt: c.createdAt,
        labels: { ...c.config.labels }, annotations: { ...c.config.annotations },
      });
    }
    return out;
  }

  async containerStatus(id: string, opts?: CallOptions): Promise<ContainerStatus> {
    this.alive('ContainerStatus', opts);
    const c = this.container(id, 'ContainerStatus');
    await c.log?.flush(); // what the status says has happened is in the log
    return {
      id, metadata: { name: c.config.metadata.name, attempt: c.config.metadata.attempt ?? 0 }, state: c.state,
      createdAt: c.createdAt, startedAt: c.startedAt, finishedAt: c.finishedAt, exitCode: c.exitCode, reason: c.reason,
      message: '', image: c.config.image, imageRef: c.imageRef, labels: { ...c.config.labels },
      annotations: { ...c.config.annotations }, mounts: [...(c.config.mounts ?? [])], logPath: c.logPath,
    };
  }

  async reopenContainerLog(id: string, opts?: CallOptions): Promise<void> {
    this.alive('ReopenContainerLog', opts);
    const c = this.container(id, 'ReopenContainerLog');
    if (c.state !== 'running') throw new RuntimeError('FAILED_PRECONDITION', 'ReopenContainerLog', 'container is not running');
    if (c.log) {
      await c.log.flush();
      c.log = new FakeLogWriter(c.logPath, this.logger);
    }
  }

  async execSync(id: string, cmd: readonly string[], _timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResult> {
    this.alive('ExecSync', opts);
    const c = this.container(id, 'ExecSync');
    if (c.state !== 'running') throw new RuntimeError('FAILED_PRECONDITION', 'ExecSync', `container is in CONTAINER_${c.state.toUpperCase()} state`);
    return fakeExec(c.view, c.behaviour, cmd);
  }

  private streams(): FakeStreamServer {
    this.streamServer ??= new FakeStreamServer(this.logger);
    return this.streamServer;
  }

  async exec(req: ExecRequest, opts?: CallOptions): Promise<string> {
    this.alive('Exec', opts);
    const c = this.container(req.containerId, 'Exec');
    if (c.state !== 'running') throw new RuntimeError('FAILED_PRECONDITION', 'Exec', 'container is not running');
    return this.streams().register({
      kind: 'exec', expected: expectedStreams(req),
      run: async (streams) => {
        const stdout = streams.get('stdout');
        const stdin = streams.get('stdin');
        // `cat` without arguments copies stdin, the one interactive command simulated here.
        if (req.cmd.length === 1 && req.cmd[0] === 'cat' && stdin) {
          await new Promise<void>((resolve) => {
            stdin.on('data', (d: Buffer) => { stdout?.write(d); });
            stdin.once('end', () => resolve());
            stdin.once('close', () => resolve());
          });
          return { exitCode: 0 };
        }
        const r = fakeExec(c.view, c.behaviour, req.cmd);
        if (r.stdout.length > 0) stdout?.write(r.stdout);
        if (r.stderr.length > 0) (streams.get('stderr') ?? stdout)?.write(r.stderr);
        return { exitCode: r.exitCode };
      },
    });
  }

  async attach(req: AttachRequest, opts?: CallOptions): Promise<string> {
    this.alive('Attach', opts);
    const c = this.container(req.containerId, 'Attach');
    return this.streams().register({
      kind: 'attach', expected: expectedStreams(req),
      // Simulated containers write only to their log: an attach shows nothing and lasts until
      // the container stops or the client leaves.
      run: (_streams: StreamSet, signal) => new Promise((resolve) => {
        const timer = setInterval(() => { if (c.state !== 'running') done(); }, 200);
        const done = (): void => { clearInterval(timer); resolve({ exitCode: 0 }); };
        signal.addEventListener('abort', done, { once: true });
      }),
    });
  }

  async portForward(sandboxId: string, _ports: readonly number[], opts?: CallOptions): Promise<string> {
    this.alive('PortForward', opts);
    this.sandbox(sandboxId, 'PortForward');
    return this.streams().register({
      kind: 'portforward', expected: [],
      onPortStream: (s) => {
        if (s.header('streamtype') === 'error') s.end(`port forwarding to port ${s.header('port') ?? '?'} is not possible: simulated pods have no network`);
        else s.end();
      },
    });
  }

  async imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    this.alive('ImageStatus', opts);
    return this.images.get(image);
  }

  async pullImage(image: string, _auth?: unknown, _sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    this.alive('PullImage', opts);
    return this.images.pull(image).id;
  }

  async listImages(filterImage?: string, opts?: CallOptions): Promise<ImageInfo[]> {
    this.alive('ListImages', opts);
    return this.images.list(filterImage);
  }

  async removeImage(image: string, opts?: CallOptions): Promise<void> {
    this.alive('RemoveImage', opts);
    this.images.remove(image);
  }

  async imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]> {
    this.alive('ImageFsInfo', opts);
    const images = this.images.list();
    return [{ timestamp: Date.now(), mountpoint: '/var/lib/fake-runtime/images', usedBytes: images.reduce((a, i) => a + i.size, 0), inodesUsed: images.length }];
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.streamServer?.close();
    for (const c of this.containers.values()) if (c.timer) clearTimeout(c.timer);
    await Promise.all([...this.containers.values()].map((c) => c.log?.flush()));
  }
}
