/**
 * Makes a container's image available by its pull policy, as Kubernetes does: IfNotPresent and
 * Never look at ImageStatus first (Never fails with ErrImageNeverPull when the image is
 * absent); Always pulls, and a failed pull is ErrImagePull, then ImagePullBackOff on the next
 * failures. The default policy is Always for `:latest` or untagged images, IfNotPresent
 * otherwise.
 */
import type { Container } from './pod-types.js';
import type { PodSandboxConfig, RuntimeBackend } from './runtime/runtime.js';

export interface Waiting { reason: string; message: string }

export interface PullOutcome {
  /** The image id or reference when the image is present. */
  readonly imageRef?: string;
  /** Why the container must wait, when it is not. */
  readonly waiting?: Waiting;
  /** Retry after this many ms (pull failures). */
  readonly retryMs?: number;
}

export type EmitEvent = (type: 'Normal' | 'Warning', reason: string, message: string) => void;

/** Pulls with the node's pull policy (images/pull-service.ts: secrets, QPS, serial, deadline). */
export type PullFn = (image: string, sandbox: PodSandboxConfig | undefined) => Promise<string>;

export function pullPolicyOf(c: Container): string {
  const image = (c.image ?? '').replace(/@.*$/, '');
  const tagged = /:[^/]+$/.test(image);
  return c.imagePullPolicy ?? (!tagged || image.endsWith(':latest') ? 'Always' : 'IfNotPresent');
}

export async function ensureImage(runtime: RuntimeBackend, c: Container, previous: Waiting | undefined, sandbox: PodSandboxConfig | undefined, emit: EmitEvent, backoffMs: number, pull?: PullFn): Promise<PullOutcome> {
  const image = c.image ?? '';
  const policy = pullPolicyOf(c);
  if (policy !== 'Always') {
    const present = await runtime.imageStatus(image);
    if (present) {
      emit('Normal', 'Pulled', `Container image "${image}" already present on machine`);
      return { imageRef: present.id };
    }
    if (policy === 'Never') {
      const waiting = { reason: 'ErrImageNeverPull', message: `Container image "${image}" is not present with pull policy of Never` };
      emit('Warning', 'ErrImageNeverPull', waiting.message);
      return { waiting, retryMs: backoffMs };
    }
  }
  emit('Normal', 'Pulling', `Pulling image "${image}"`);
  const t0 = Date.now();
  try {
    const ref = pull ? await pull(image, sandbox) : await runtime.pullImage(image, undefined, sandbox);
    emit('Normal', 'Pulled', `Successfully pulled image "${image}" in ${Date.now() - t0}ms`);
    return { imageRef: ref };
  } catch (e) {
    const again = previous?.reason === 'ErrImagePull' || previous?.reason === 'ImagePullBackOff';
    const message = again ? `Back-off pulling image "${image}"` : `failed to pull image "${image}": ${(e as Error).message}`;
    emit('Warning', again ? 'BackOff' : 'Failed', again ? message : `Failed to pull image "${image}": ${(e as Error).message}`);
    return { waiting: { reason: again ? 'ImagePullBackOff' : 'ErrImagePull', message }, retryMs: again ? backoffMs : 1000 };
  }
}
