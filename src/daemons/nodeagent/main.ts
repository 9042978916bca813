/**
 * The node agent daemon: start-up checks, the runtime backend, the API client (when
 * --coreconfig exists; otherwise standalone), node registration, status and Lease, the pod
 * sources merged into one set, the pod manager with its workers, and the servers.
 * `startNodeAgent` returns a handle (tests use it); `run` is what `corectl nodeagent` calls.
 */
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';

import { pino, type Logger } from 'pino';
import { loadCoreconfig } from '../../client/coreconfig.js';
import { SharedInformerFactory } from '../../client/informer-factory.js';
import { RestClient } from '../../client/rest-client.js';
import type { NodeagentConfig } from '../../flags/nodeagent.js';
import { ApiObjects } from './api-objects.js';
import { bootstrapIfNeeded, clientCredentials, clientRotator, rotatesServing, servingRotator, storedServingPair } from './certificates/node-certificates.js';
import type { CertificateRotator } from './certificates/rotation.js';
import { EventRecorder } from './events.js';
import type { EvictionManager } from './eviction/eviction-manager.js';
import { admitUnderPressure } from './eviction/eviction-admission.js';
import { setUpEviction } from './eviction/eviction-setup.js';
import type { PodUsageSource } from './eviction/pod-usage.js';
import type { Observations } from './eviction/thresholds.js';
import { imageFsDirOf, setUpImages, type NodeImages } from './images/image-setup.js';
import { withImageService } from './images/image-service.js';
import { readHostFacts, type HostFacts } from './host-facts.js';
import { NodeLease } from './lease.js';
import { MirrorPods } from './mirror-pods.js';
import { nodeResources } from './node-resources.js';
import { NodeStatusManager } from './node-status.js';
import { PodManager } from './pod-manager.js';
import { PodSet, type PodSource } from './pod-set.js';
import { DEFAULT_BACKOFF, type BackoffSettings } from './pod-worker.js';
import { parseResolvConf, type HostDns } from './runtime-config.js';
import { createRuntimeBackend } from './runtime/runtime-factory.js';
import { clientTokenRequester, ProjectedVolumes } from './volumes/projected.js';
import { apiClaimReader } from './volumes/claims.js';
import { apiSourceObjects } from './volumes/source-objects.js';
import { CsiNode } from './volumes/csi-node.js';
import { configureMounter } from './volumes/host-mounts.js';
import { apiAttachments, CONTROLLER_MANAGED_ANNOTATION } from './volumes/csi-attach.js';
import type { RuntimeBackend } from './runtime/runtime.js';
import { agentAccessFromConfig } from './server/agent-authz.js';
import { openListeners, type Listeners } from './server/listeners.js';
import { attachApiserverSource, podInformer } from './sources/apiserver-source.js';
import { readManifestPath, runFileSource } from './sources/file-source.js';
import { runHttpSource } from './sources/http-source.js';
import { StatsProvider } from './stats/summary.js';
import { applyOomScoreAdj, checkSwap, StartupError, takeLockFile } from './startup-checks.js';
import { startNodeGuards } from './cm/setup.js';
import { describeMismatches, kernelTunableMismatches } from './safety/kernel-tunables.js';
import { watchLockContention } from './safety/lock-contention.js';
import { raiseOpenFiles } from './safety/open-files.js';

/** /healthz fails when the runtime has not answered a relist for this long (Kubernetes: 3 minutes). */
const RELIST_HEALTHY_MS = 3 * 60_000;

export interface StartOptions {
  readonly log?: Logger;
  /** Use this runtime instead of the one --container-runtime names (tests). */
  readonly runtime?: RuntimeBackend;
  /** Where pod log directories go; default /var/log/pods. */
  readonly podLogDir?: string;
  readonly backoff?: Partial<BackoffSettings>;
  readonly relistPeriodMs?: number;
  readonly leaseRenewIntervalMs?: number;
  /** Skip the process-wide start-up rules (oom score, open files) that tests must not apply. */
  readonly skipProcessTweaks?: boolean;
  readonly swapsPath?: string;
  /** How often container CPU is sampled for usageNanoCores (default 10 s, kubelet's housekeeping). */
  readonly statsPeriodMs?: number;
  /** Eviction signals from here instead of the host (tests), measured this often (default 10 s). */
  readonly evictionSignals?: () => Promise<Observations>;
  readonly evictionPodUsage?: PodUsageSource;
  readonly evictionIntervalMs?: number;
  readonly imageGcPeriodMs?: number;
  /** /proc/sys for --protect-kernel-defaults (tests). */
  readonly procSysPath?: string;
  /** How long a held --lock-file is asked for and waited for; default 10 s. */
  readonly lockWaitMs?: number;
}

export interface NodeAgent {
  readonly nodeName: string;
  readonly host: HostFacts;
  readonly runtime: RuntimeBackend;
  readonly podSet: PodSet;
  readonly pods: PodManager;
  readonly nodeStatus?: NodeStatusManager;
  readonly lease?: NodeLease;
  readonly listeners?: Listeners;
  readonly client?: RestClient;
  readonly eviction: EvictionManager;
  readonly images: NodeImages;
  /** Resolves when another process asked for --lock-file under --exit-on-lock-contention. */
  readonly lockContended: Promise<void>;
  /** Stops loops and servers; leaves running pods alone unless `stopPods`. */
  stop(opts?: { stopPods?: boolean }): Promise<void>;
}

async function hostDns(path: string, log: Logger): Promise<HostDns> {
  try {
    return parseResolvConf(await readFile(path, 'utf8'));
  } catch (e) {
    if (path) log.warn({ file: path, err: (e as Error).message }, '--resolv-conf could not be read; pods get no host DNS');
    return { servers: [], searches: [], options: [] };
  }
}

export async function startNodeAgent(config: NodeagentConfig, opts: StartOptions = {}): Promise<NodeAgent> {
  const log = opts.log ?? pino({ level: 'silent' });
  checkSwap(config.failSwapOn, opts.swapsPath);
  const tunables = await kernelTunableMismatches(opts.procSysPath);
  if (tunables.length && config.protectKernelDefaults) throw new StartupError(`--protect-kernel-defaults: ${describeMismatches(tunables)}`);
  if (tunables.length) log.info({ tunables }, 'kernel tunables differ from the node agent\'s defaults (--protect-kernel-defaults would refuse)');
  if (config.exitOnLockContention && !config.lockFile) throw new StartupError('--exit-on-lock-contention needs --lock-file');
  const releaseLock = config.lockFile ? await takeLockFile(config.lockFile, config.exitOnLockContention, opts.lockWaitMs ?? 10_000) : () => undefined;
  const cleanups: (() => Promise<void> | void)[] = [releaseLock];
  let lockContended: () => void = () => undefined;
  const contended = new Promise<void>((r) => { lockContended = r; });
  if (config.lockFile && config.exitOnLockContention) cleanups.push(watchLockContention(config.lockFile, () => { log.info({ lockFile: config.lockFile }, 'another process asked for the lock file: exiting (--exit-on-lock-contention)'); lockContended(); }));
  const ac = new AbortController();
  // One signal goes to every API call the agent makes: lift Node's listener warning limit.
  setMaxListeners(0, ac.signal);
  const loops: Promise<void>[] = [];
  try {
    if (!opts.skipProcessTweaks) {
      applyOomScoreAdj(config.oomScoreAdj, log);
      raiseOpenFiles(config.maxOpenFiles, log);
    }
    await mkdir(config.rootDir, { recursive: true });
    const host = await readHostFacts({ hostnameOverride: config.hostnameOverride, nodeIp: config.nodeIp, rootDir: config.rootDir });
    const nodeName = host.nodeName;
    const runtimeFor = (endpoint: string): Promise<RuntimeBackend> => createRuntimeBackend({
      containerRuntime: config.containerRuntime, containerRuntimeEndpoint: endpoint,
      runtimeRequestTimeoutMs: config.runtimeRequestTimeout, logger: log.child({ component: 'runtime' }),
      fake: { nodeIp: host.internalIp, ...(config.podCidr ? { podCidr: config.podCidr } : {}) },
    });
    let runtime = opts.runtime ?? await runtimeFor(config.containerRuntimeEndpoint);
    // --image-service-endpoint: image calls go to their own CRI endpoint.
    if (!opts.runtime && config.imageServiceEndpoint && config.imageServiceEndpoint !== config.containerRuntimeEndpoint) {
      runtime = withImageService(runtime, await runtimeFor(config.imageServiceEndpoint));
    }
    if (!opts.runtime) cleanups.push(() => runtime.close());
    const version = await runtime.version();
    log.info({ runtime: version.runtimeName, version: version.runtimeVersion }, 'container runtime connected');

    let client: RestClient | undefined;
    let eventClient: RestClient | undefined;
    let clientRotation: CertificateRotator | undefined;
    await bootstrapIfNeeded(config, nodeName, ac.signal, log.child({ component: 'certificates' }));
    if (config.coreconfig && existsSync(config.coreconfig) && !config.runonce) {
      const { connection, pair } = await clientCredentials(config, await loadCoreconfig({ path: config.coreconfig }));
      client = new RestClient({ connection, contentType: config.coreApiContentType, qps: config.coreApiQps, burst: config.coreApiBurst, userAgent: `nodeagent/${nodeName}`, log: log.child({ component: 'client' }) });
      // Events have their own budget (--event-qps/--event-burst, enforced by the recorder, which
      // drops what is over it), as Kubernetes' node agent keeps an event client apart: a burst
      // of events never queues pod status writes behind it. Same connection, no second limiter.
      eventClient = new RestClient({ connection, contentType: config.coreApiContentType, qps: 0, userAgent: `nodeagent/${nodeName}`, sharedTransport: client.transport, log: log.child({ component: 'event-client' }) });
      cleanups.push(() => client?.close());
      if (pair) clientRotation = clientRotator(config, client, nodeName, pair, log.child({ component: 'client-certificate' }));
    } else {
      log.info({ coreconfig: config.coreconfig }, 'no coreconfig: running standalone (local pod sources only)');
    }

    const resources = nodeResources(host, {
      maxPods: config.maxPods, podsPerCore: config.podsPerCore, coreReserved: config.coreReserved, systemReserved: config.systemReserved,
      evictionHard: config.evictionHard, ignoreEviction: config.experimentalAllocatableIgnoreEviction,
    });
    const guards = await startNodeGuards(config, { runtime, host, log });
    const podSet = new PodSet();
    const api = new ApiObjects(client, log.child({ component: 'api-objects' }), ac.signal);
    const imageFsDir = imageFsDirOf(runtime);
    const images = await setUpImages(config, runtime, { reader: api, imageFsDir, log: log.child({ component: 'images' }), ...(opts.imageGcPeriodMs ? { gcPeriodMs: opts.imageGcPeriodMs } : {}) });
    const events = new EventRecorder({ ...(eventClient ? { client: eventClient } : {}), nodeName, qps: config.eventQps, burst: config.eventBurst, log: log.child({ component: 'events' }), signal: ac.signal });
    const sources: PodSource[] = [];
    if (client) sources.push('api');
    if (config.podManifestPath) sources.push('file');
    if (config.manifestUrl) sources.push('http');

    let nodeStatus: NodeStatusManager | undefined;
    const factory = client ? new SharedInformerFactory({ client, minResyncPeriodMs: 0, log: log.child({ component: 'informers' }) }) : undefined;
    const informer = factory ? podInformer(factory, nodeName) : undefined;
    // Services for the containers' environment variables (service-env.ts).
    const serviceInformer = factory?.informerFor({ group: '', version: 'v1', resource: 'services' });
    const mirrors = client && informer ? new MirrorPods({ client, informer, nodeName, nodeUid: () => nodeStatus?.uid ?? '', log: log.child({ component: 'mirror-pods' }), signal: ac.signal }) : undefined;
    configureMounter({ path: config.experimentalMounterPath, checkHelpers: config.experimentalCheckNodeCapabilitiesBeforeMount });
    const csi = new CsiNode({
      rootDir: config.rootDir, reader: api, log: log.child({ component: 'csi' }),
      ...(client && config.enableControllerAttachDetach ? { attachments: apiAttachments(client, nodeName) } : {}),
    });
    cleanups.push(() => csi.close());
    const pods = new PodManager({
      podSet, api, ...(mirrors ? { mirrors } : {}), maxPods: resources.maxPods, hostIp: host.internalIp, syncFrequencyMs: config.syncFrequency,
      admit: (pod) => admitUnderPressure(pod, eviction.manager.conditions()),
      ...(opts.relistPeriodMs ? { relistPeriodMs: opts.relistPeriodMs } : {}), sources, log: log.child({ component: 'pods' }),
      workerDeps: {
        runtime, runtimeName: version.runtimeName, hostIp: host.internalIp, rootDir: config.rootDir,
        logDir: opts.podLogDir ?? '/var/log/pods',
        dns: { host: await hostDns(config.resolvConf, log), clusterDns: config.clusterDns, clusterDomain: config.clusterDomain },
        cfsQuota: config.cpuCfsQuota, allocatable: resources.allocatable, reader: api,
        ...(serviceInformer ? { services: { synced: () => serviceInformer.hasSynced(), list: () => serviceInformer.indexer.list() } } : {}),
        projected: new ProjectedVolumes({
          ...(client ? { requester: clientTokenRequester(client.create.bind(client)) } : {}),
          signal: ac.signal, log: log.child({ component: 'projected-volumes' }),
        }),
        ...(client ? { claims: apiClaimReader(client, ac.signal), sources: apiSourceObjects(client, ac.signal) } : {}),
        csi,
        events, pullImage: images.pullImage, hooks: guards.hooks, backoff: { ...DEFAULT_BACKOFF, ...opts.backoff }, log: log.child({ component: 'pod-worker' }),
      },
    });
    const eviction = setUpEviction(config, {
      runtime, pods, logDir: opts.podLogDir ?? '/var/log/pods', events, imageGc: images.gc, imageFsDir,
      onConditionsChange: () => { void nodeStatus?.tick(false, ac.signal).catch(() => undefined); },
      ...(opts.evictionSignals ? { measure: opts.evictionSignals } : {}), ...(opts.evictionPodUsage ? { podUsage: opts.evictionPodUsage } : {}),
      ...(opts.evictionIntervalMs ? { monitoringIntervalMs: opts.evictionIntervalMs } : {}), log: log.child({ component: 'eviction' }),
    });
    guards.hooks.trackPods(() => [...pods.workers.values()].filter((w) => w.active).map((w) => w.current));
    loops.push(guards.hooks.run(ac.signal));

    const stats = new StatsProvider({
      nodeName, runtime, pods, rootDir: config.rootDir, logDir: opts.podLogDir ?? '/var/log/pods', volumeStatsAggPeriodMs: config.volumeStatsAggPeriod,
      startTime: Date.now(), log: log.child({ component: 'stats' }),
    });
    loops.push(stats.run(ac.signal, opts.statsPeriodMs));
    let listeners: Listeners | undefined;
    const rotateServing = client !== undefined && rotatesServing(config);
    const servingPair = rotateServing ? await storedServingPair(config) : undefined;
    if (config.enableServer) {
      const access = agentAccessFromConfig(config, {
        nodeName, ...(client ? { create: client.create.bind(client) } : {}), signal: ac.signal,
        log: log.child({ component: 'server-auth' }), fail: (m) => new StartupError(m),
      });
      listeners = await openListeners({
        address: config.address || '0.0.0.0', port: config.port, readOnlyPort: config.readOnlyPort, healthzBindAddress: config.healthzBindAddress || '127.0.0.1',
        healthzPort: config.healthzPort, tlsCertFile: config.tlsCertFile, tlsPrivateKeyFile: config.tlsPrivateKeyFile,
        certDir: config.certDir, clientCaFile: config.clientCaFile, hostname: host.hostname, nodeIp: host.internalIp,
        ...(servingPair ? { servingPair: { cert: servingPair.certPem, key: servingPair.keyPem } } : {}),
      }, {
        nodeName, pods, podSet, runtime, startTime: Date.now(), enableDebuggingHandlers: config.enableDebuggingHandlers, manifestApi: config.enableManifestApi,
        anonymousAuth: config.anonymousAuth, access, stats, streamIdleTimeoutMs: config.streamingConnectionIdleTimeout, healthy: () => Date.now() - pods.lastRelistOk < RELIST_HEALTHY_MS, log: log.child({ component: 'server' }),
      });
      const l = listeners;
      cleanups.push(() => l.close());
      log.info({ port: l.securePort, readOnlyPort: l.readOnlyPort, healthzPort: l.healthzPort }, 'node agent serving');
      if (rotateServing && client) {
        const names = { nodeName, hostname: host.hostname, ip: host.internalIp };
        loops.push(servingRotator(config, client, names, servingPair, (p) => l.setServingPair(p.certPem, p.keyPem), log.child({ component: 'serving-certificate' })).run(ac.signal));
      }
    }
    if (clientRotation) loops.push(clientRotation.run(ac.signal));

    let lease: NodeLease | undefined;
    if (client && config.registerNode) {
      const ns = new NodeStatusManager({
        client, runtime, host, resources, labels: config.nodeLabels, taints: config.registerWithTaints, providerId: config.providerId,
        port: listeners?.securePort ?? config.port, updateFrequencyMs: config.nodeStatusUpdateFrequency, pressure: () => eviction.manager.conditions(),
        log: log.child({ component: 'node-status' }),
        ...(config.enableControllerAttachDetach ? { annotations: { [CONTROLLER_MANAGED_ANNOTATION]: 'true' } } : {}), volumesInUse: () => csi.volumesInUse(),
      });
      nodeStatus = ns;
      lease = new NodeLease({ client, nodeName, nodeUid: () => ns.uid, ...(opts.leaseRenewIntervalMs ? { renewIntervalMs: opts.leaseRenewIntervalMs } : {}), log: log.child({ component: 'lease' }) });
      const l = lease;
      loops.push(ns.run(ac.signal));
      // The Lease waits for registration so that it can point at the Node.
      loops.push((async () => { while (!ns.registered && !ac.signal.aborted) await new Promise((r) => setTimeout(r, 50)); await l.run(ac.signal); })());
    }
    if (informer && factory) {
      attachApiserverSource(informer, podSet);
      factory.start(ac.signal);
      loops.push(factory.waitForCacheSync(ac.signal).then((ok) => { if (ok) podSet.replace('api', podSet.list('api')); }));
      loops.push(factory.stopped());
    }
    if (config.podManifestPath) loops.push(runFileSource({ path: config.podManifestPath, nodeName, periodMs: config.fileCheckFrequency, podSet, log: log.child({ component: 'file-source' }) }, ac.signal));
    if (config.manifestUrl) loops.push(runHttpSource({ url: config.manifestUrl, header: config.manifestUrlHeader, nodeName, periodMs: config.httpCheckFrequency, podSet, log: log.child({ component: 'http-source' }) }, ac.signal));
    loops.push(pods.run(ac.signal));
    loops.push(eviction.run(ac.signal));
    loops.push(images.gc.run(ac.signal));

    let stopped = false;
    return {
      nodeName, host, runtime, podSet, pods, lockContended: contended, eviction: eviction.manager, images, ...(nodeStatus ? { nodeStatus } : {}), ...(lease ? { lease } : {}), ...(listeners ? { listeners } : {}), ...(client ? { client } : {}),
      async stop(o = {}): Promise<void> {
        if (stopped) return;
        stopped = true;
        if (o.stopPods) await pods.stopAll();
        ac.abort();
        await Promise.allSettled(loops);
        pods.haltAll();
        for (const c of cleanups.reverse()) await c();
      },
    };
  } catch (e) {
    ac.abort();
    await Promise.allSettled(loops);
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
    throw e;
  }
}

/** --runonce: run the local pods once, print their status (one JSON line per pod), exit. */
export async function runOnce(config: NodeagentConfig, log: Logger, signal: AbortSignal, out: NodeJS.WritableStream, opts: StartOptions = {}): Promise<number> {
  const agent = await startNodeAgent({ ...config, podManifestPath: '', manifestUrl: '' }, { ...opts, log });
  try {
    const pods = config.podManifestPath ? await readManifestPath(config.podManifestPath, agent.nodeName, log) : [];
    agent.podSet.replace('file', pods);
    if (config.manifestUrl) {
      const { fetchManifestUrl } = await import('./sources/http-source.js');
      agent.podSet.replace('http', await fetchManifestUrl(config.manifestUrl, config.manifestUrlHeader, agent.nodeName, signal));
    }
    const deadline = Date.now() + 5 * 60_000;
    const settled = (): boolean => agent.pods.pods().every((p) => ['Running', 'Succeeded', 'Failed'].includes(p.status?.phase ?? ''));
    while (!signal.aborted && Date.now() < deadline && !settled()) await new Promise((r) => setTimeout(r, 200));
    let ok = true;
    for (const p of agent.pods.pods()) {
      const phase = p.status?.phase ?? 'Unknown';
      if (phase !== 'Running' && phase !== 'Succeeded') ok = false;
      out.write(JSON.stringify({ namespace: p.metadata?.namespace, name: p.metadata?.name, phase, containerStatuses: p.status?.containerStatuses ?? [] }) + '\n');
    }
    return ok ? 0 : 1;
  } finally {
    await agent.stop();
  }
}

export async function run(config: NodeagentConfig, ctx: { log: Logger; signal: AbortSignal }): Promise<number> {
  try {
    if (config.runonce) return await runOnce(config, ctx.log, ctx.signal, process.stdout);
    const agent = await startNodeAgent(config, { log: ctx.log });
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      void agent.lockContended.then(resolve);
    });
    await agent.stop();
    return 0;
  } catch (e) {
    if (e instanceof StartupError) {
      process.stderr.write(`nodeagent: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

