/**
 * ImagePolicyWebhook: before a pod is stored, its images (init, regular, ephemeral containers)
 * are sent as an imagepolicy.k8s.io/v1alpha1 ImageReview to the webhook of the kubeconfig-format
 * file the configuration names, with the pod's `*.image-policy.k8s.io/*` annotations and its
 * namespace. `status.allowed: false` refuses the pod (403, `image policy webhook backend denied
 * one or more images: <reason>`). Answers are cached by review: allowed ones for allowTTL, denied
 * ones for denyTTL (seconds). A call that fails is retried (from retryBackoff ms, ×1.5, 5 tries);
 * then `defaultAllow` decides: true admits the pod and marks it with the annotation
 * alpha.image-policy.k8s.io/failed-open=true, false refuses it with the error. The backend's
 * status.auditAnnotations (and failed-open) become audit annotations prefixed
 * imagepolicywebhook.image-policy.k8s.io/ when the request collects them.
 *
 * Configuration (Kubernetes' form, in --admission-control-config-file):
 *   imagePolicy: { kubeConfigFile, allowTTL: 300, denyTTL: 30, retryBackoff: 500, defaultAllow: false }
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { loadCoreconfig, type ClientConnection } from '../../../client/coreconfig.js';
import { WebhookClient, withRetries } from '../../../client/webhook-client.js';
import { isObject } from './config-file.js';
import { allContainers, podSpec } from './pod-shape.js';
import { isPod, type AdmissionAttributes, type AdmissionContext, type AdmissionPlugin } from './types.js';

export const FAILED_OPEN_ANNOTATION = 'alpha.image-policy.k8s.io/failed-open';
const MAX_RESPONSE_BYTES = 1 << 20;
const CACHE_SIZE = 1024;

export interface ImagePolicyWebhookConfig {
  readonly connection: ClientConnection;
  readonly allowTtlMs: number;
  readonly denyTtlMs: number;
  readonly retryBackoffMs: number;
  readonly defaultAllow: boolean;
}

function duration(v: unknown, name: string, dflt: number, unit: number, min: number, max: number): number {
  if (v === undefined || v === null || v === 0) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v * unit < min || v * unit > max) {
    throw new Error(`imagePolicy.${name}: valid values are between ${min / unit} and ${max / unit}, got ${JSON.stringify(v)}`);
  }
  return v * unit;
}

export async function parseImagePolicyWebhookConfig(raw: unknown): Promise<ImagePolicyWebhookConfig> {
  const body = isObject(raw) ? raw['imagePolicy'] : undefined;
  if (!isObject(body)) throw new Error('a configuration with imagePolicy.kubeConfigFile is required');
  const file = body['kubeConfigFile'];
  if (typeof file !== 'string' || !file) throw new Error('imagePolicy.kubeConfigFile: Required value');
  let connection: ClientConnection;
  try {
    connection = await loadCoreconfig({ path: file });
  } catch (e) {
    throw new Error((e as Error).message);
  }
  return {
    connection,
    allowTtlMs: duration(body['allowTTL'], 'allowTTL', 300_000, 1000, 1000, 1_800_000),
    denyTtlMs: duration(body['denyTTL'], 'denyTTL', 30_000, 1000, 1000, 1_800_000),
    retryBackoffMs: duration(body['retryBackoff'], 'retryBackoff', 500, 1, 1, 300_000),
    defaultAllow: body['defaultAllow'] === true,
  };
}

interface ReviewSpec { containers: Array<{ image: string }>; annotations?: Record<string, string>; namespace: string }
interface ReviewStatus { allowed: boolean; reason: string; auditAnnotations: Record<string, string> }

function reviewSpec(a: AdmissionAttributes): ReviewSpec {
  const spec: ReviewSpec = { containers: allContainers(podSpec(a.object)).map((c) => ({ image: c.image ?? '' })), namespace: a.namespace };
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(a.object?.metadata?.annotations ?? {})) {
    const parts = k.split('/');
    if (parts.length === 2 && parts[0]!.endsWith('.image-policy.k8s.io')) annotations[k] = v;
  }
  if (Object.keys(annotations).length) spec.annotations = annotations;
  return spec;
}

function statusOf(raw: unknown): ReviewStatus {
  const doc = raw as { status?: { allowed?: unknown; reason?: unknown; auditAnnotations?: unknown } };
  const notes = doc.status?.auditAnnotations;
  const auditAnnotations = Object.fromEntries(Object.entries(typeof notes === 'object' && notes !== null ? notes : {}).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  return { allowed: doc.status?.allowed === true, reason: typeof doc.status?.reason === 'string' ? doc.status.reason : '', auditAnnotations };
}

export function imagePolicyWebhook(ctx: AdmissionContext): AdmissionPlugin {
  const config = ctx.pluginConfigs?.get('ImagePolicyWebhook') as ImagePolicyWebhookConfig;
  const client = new WebhookClient(config.connection);
  const cache = new Map<string, { status: ReviewStatus; expires: number }>();

  const callWithRetries = (spec: ReviewSpec): Promise<ReviewStatus> => withRetries(() => client.postJson(
    { apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview', spec },
    { timeoutMs: 10_000, maxBytes: MAX_RESPONSE_BYTES, retryOn: 'any-failure', quoteBody: 200, kind: 'ImageReview', read: statusOf },
  ), { attempts: 5, initialBackoffMs: config.retryBackoffMs });

  const decide = (a: AdmissionAttributes, status: ReviewStatus): void => {
    // The backend's audit annotations, under the plugin's prefix (as Kubernetes).
    const notes = a.request?.auditAnnotations;
    if (notes) for (const [k, v] of Object.entries(status.auditAnnotations)) notes[`imagepolicywebhook.image-policy.k8s.io/${k}`] = v;
    if (!status.allowed) {
      throw errors.admissionForbidden({ resource: 'pods', name: a.object?.metadata?.name ?? a.name }, `image policy webhook backend denied one or more images: ${status.reason}`);
    }
  };

  const failed = (a: AdmissionAttributes, e: Error): void => {
    ctx.log?.warn({ err: e.message }, 'ImagePolicyWebhook: error contacting webhook backend');
    if (!config.defaultAllow) throw errors.admissionForbidden({ resource: 'pods', name: a.object?.metadata?.name ?? a.name }, e.message);
    if (a.request?.auditAnnotations) a.request.auditAnnotations['imagepolicywebhook.image-policy.k8s.io/failed-open'] = 'true';
    const obj = a.object as KubeObject;
    obj.metadata = { ...(obj.metadata ?? {}), annotations: { ...(obj.metadata?.annotations ?? {}), [FAILED_OPEN_ANNOTATION]: 'true' } };
  };

  return {
    name: 'ImagePolicyWebhook',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && (sub === '' || sub === 'ephemeralcontainers'),
    validate(a) {
      if (!a.object) return;
      const spec = reviewSpec(a);
      const key = JSON.stringify(spec);
      const hit = cache.get(key);
      if (hit && hit.expires > Date.now()) return decide(a, hit.status);
      if (hit) cache.delete(key);
      return callWithRetries(spec).then((status) => {
        cache.set(key, { status, expires: Date.now() + (status.allowed ? config.allowTtlMs : config.denyTtlMs) });
        if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
        decide(a, status);
      }, (e: Error) => failed(a, e));
    },
  };
}
