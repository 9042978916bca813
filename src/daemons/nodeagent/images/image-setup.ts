/**
 * The node agent's image management, wired from its options: the image service endpoint, the
 * air-gapped archives of <root-dir>/images/, the pull service (secrets, QPS, serial pulls,
 * progress deadline) and image garbage collection.
 */
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { NodeagentConfig } from '../../../flags/nodeagent.js';
import type { ObjectReader } from '../env.js';
import type { Pod } from '../pod-types.js';
import type { PodSandboxConfig, RuntimeBackend } from '../runtime/runtime.js';
import { containerdContentDir, contentStoreProgress } from './containerd-progress.js';
import { ImageGc, type FsUsage } from './image-gc.js';
import { importImageArchives } from './image-archives.js';
import { credentialsFor, type SecretData } from './pull-secrets.js';
import { PullService } from './pull-service.js';

export type ImageConfig = Pick<NodeagentConfig,
  'rootDir' | 'containerRuntimeEndpoint' | 'imageServiceEndpoint' | 'registryQps' | 'registryBurst' | 'serializeImagePulls'
  | 'imagePullProgressDeadline' | 'imageGcHighThreshold' | 'imageGcLowThreshold' | 'minimumImageTtlDuration' | 'podInfraContainerImage'>;

/** The image store's directory (CRI ImageFsInfo's mountpoint), looked up once it answers. */
export function imageFsDirOf(runtime: RuntimeBackend): () => Promise<string | undefined> {
  let dir: string | undefined;
  return async () => {
    if (dir) return dir;
    try { dir = (await runtime.imageFsInfo())[0]?.mountpoint || undefined; } catch { /* not yet */ }
    return dir;
  };
}

export interface NodeImages {
  readonly pulls: PullService;
  readonly gc: ImageGc;
  readonly pullImage: (image: string, pod: Pod, sandbox: PodSandboxConfig | undefined) => Promise<string>;
}

export async function setUpImages(config: ImageConfig, runtime: RuntimeBackend, deps: {
  readonly reader: ObjectReader; readonly log: Logger; readonly imageFsDir: () => Promise<string | undefined>; readonly gcPeriodMs?: number;
}): Promise<NodeImages> {
  const endpoint = config.imageServiceEndpoint || config.containerRuntimeEndpoint;
  if (runtime.name === 'cri') {
    const r = await importImageArchives(join(config.rootDir, 'images'), endpoint, deps.log.child({ component: 'image-archives' }));
    if (r.imported.length || r.failed.length) deps.log.info({ imported: r.imported, failed: r.failed, skipped: r.skipped.length }, 'image archives');
  }
  const contentDir = runtime.name === 'cri' ? await containerdContentDir(runtime) : undefined;
  const pulls = new PullService({
    runtime, qps: config.registryQps, burst: config.registryBurst, serialize: config.serializeImagePulls,
    progressDeadlineMs: config.imagePullProgressDeadline, ...(contentDir ? { progress: contentStoreProgress(contentDir) } : {}),
    log: deps.log.child({ component: 'image-pulls' }),
  });
  const imageFs = async (): Promise<FsUsage | undefined> => {
    const dir = await deps.imageFsDir();
    if (!dir) return undefined;
    try { const s = await statfs(dir); return { capacity: s.blocks * s.bsize, available: s.bavail * s.bsize }; } catch { return undefined; }
  };
  const gc = new ImageGc({
    runtime, imageFs, highThresholdPercent: config.imageGcHighThreshold, lowThresholdPercent: config.imageGcLowThreshold,
    minAgeMs: config.minimumImageTtlDuration, keep: [config.podInfraContainerImage], ...(deps.gcPeriodMs ? { periodMs: deps.gcPeriodMs } : {}),
    log: deps.log.child({ component: 'image-gc' }),
  });
  const pullImage = async (image: string, pod: Pod, sandbox: PodSandboxConfig | undefined): Promise<string> => {
    const ns = pod.metadata?.namespace ?? 'default';
    const secrets: SecretData[] = [];
    for (const ref of pod.spec?.imagePullSecrets ?? []) {
      if (!ref.name) continue;
      const s = await deps.reader.secret(ns, ref.name).catch(() => undefined);
      if (s) secrets.push(s);
      else deps.log.warn({ pod: `${ns}/${pod.metadata?.name}`, secret: ref.name }, 'pull secret not found; pulling without it');
    }
    return pulls.pull(image, credentialsFor(image, secrets), sandbox);
  };
  return { pulls, gc, pullImage };
}
