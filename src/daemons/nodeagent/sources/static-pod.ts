/**
 * Turns a manifest from a local source (file, URL, the agent's own endpoint) into the pod the
 * agent runs, as Kubernetes does for static pods: the name gets `-<node name>` appended, the
 * namespace defaults to `default`, the uid is a hash of the source, node name and content, and
 * the annotations kubernetes.io/config.source and kubernetes.io/config.hash are set; the pod
 * tolerates every NoExecute taint and is bound to this node.
 */
import { createHash } from 'node:crypto';
import { loadAll } from 'js-yaml';
import { defaultPodSpec } from '../../../api/resources/core/pod-spec.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_SOURCE_ANNOTATION, type Dict, type Pod } from '../pod-types.js';

export type StaticSource = 'file' | 'http' | 'server';

export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isDict(v: unknown): v is Dict {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every pod object in a manifest text: a Pod, or a List / PodList of pods (YAML or JSON, multi-document). */
export function parseManifestText(text: string, where: string): Dict[] {
  let docs: unknown[];
  try {
    docs = loadAll(text);
  } catch (e) {
    throw new ManifestError(`${where}: not valid YAML or JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  const out: Dict[] = [];
  for (const d of docs) {
    if (d === null || d === undefined) continue;
    if (!isDict(d)) throw new ManifestError(`${where}: a manifest must be an object`);
    if ((d.kind === 'List' || d.kind === 'PodList') && Array.isArray(d.items)) {
      for (const i of d.items) if (isDict(i)) out.push(i);
      continue;
    }
    out.push(d);
  }
  return out;
}

/** Validates and completes one manifest into the static pod for `nodeName`. */
export function staticPodFrom(manifest: Dict, source: StaticSource, nodeName: string, where: string): Pod {
  if (manifest.kind !== undefined && manifest.kind !== 'Pod') throw new ManifestError(`${where}: kind ${String(manifest.kind)} is not Pod`);
  if (manifest.apiVersion !== undefined && manifest.apiVersion !== 'v1') throw new ManifestError(`${where}: apiVersion ${String(manifest.apiVersion)} is not v1`);
  const pod = structuredClone(manifest) as Pod & Dict;
  const meta = pod.metadata ?? {};
  if (!meta.name) throw new ManifestError(`${where}: metadata.name is required`);
  if (!NAME_RE.test(meta.name)) throw new ManifestError(`${where}: metadata.name ${JSON.stringify(meta.name)} is not a valid DNS subdomain`);
  const spec = pod.spec;
  if (!isDict(spec) || !Array.isArray(spec.containers) || spec.containers.length === 0) throw new ManifestError(`${where}: spec.containers must list at least one container`);
  for (const c of spec.containers) {
    if (!isDict(c) || typeof c.name !== 'string' || !c.name) throw new ManifestError(`${where}: every container needs a name`);
    if (typeof c.image !== 'string' || !c.image) throw new ManifestError(`${where}: container ${c.name} needs an image`);
  }
  delete pod.status;
  const namespace = meta.namespace || 'default';
  // The hash covers what the user wrote plus where it runs, as Kubernetes' does.
  const hash = createHash('md5').update(JSON.stringify({ pod, source, nodeName })).digest('hex');
  // No service account (a mirror pod may not name one) and no priority (the API server's
  // Priority admission sets the mirror pod's from its class).
  defaultPodSpec(spec as Dict);
  spec.nodeName = nodeName;
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  spec.tolerations = [...tolerations, { operator: 'Exists', effect: 'NoExecute' }];
  pod.apiVersion = 'v1';
  pod.kind = 'Pod';
  pod.metadata = {
    ...meta,
    name: `${meta.name}-${nodeName}`,
    namespace,
    uid: hash,
    annotations: { ...(meta.annotations ?? {}), [CONFIG_SOURCE_ANNOTATION]: source, [CONFIG_HASH_ANNOTATION]: hash },
  };
  return pod;
}
