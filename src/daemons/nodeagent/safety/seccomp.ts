/**
 * Seccomp profiles from the pod's and containers' securityContext.seccompProfile (the
 * container's wins) to the CRI SecurityProfile: RuntimeDefault, Unconfined, or Localhost with
 * the profile file under --seccomp-profile-root. A Localhost profile must be a relative path
 * that stays inside the root (no "..", no absolute path); no profile at all leaves the runtime's
 * unconfined default, as Kubernetes does without the SeccompDefault gate.
 */
import { isAbsolute, join, normalize } from 'node:path';
import type { Container, Pod } from '../pod-types.js';
import type { SeccompProfile } from '../runtime/runtime.js';

interface ApiSeccomp { type?: string; localhostProfile?: string }

export class SeccompProfileError extends Error {
  override readonly name = 'SeccompProfileError';
}

function fromApi(p: ApiSeccomp | undefined, root: string): SeccompProfile | undefined {
  if (!p?.type) return undefined;
  if (p.type === 'RuntimeDefault') return { profileType: 'RuntimeDefault' };
  if (p.type === 'Unconfined') return { profileType: 'Unconfined' };
  if (p.type === 'Localhost') {
    const rel = p.localhostProfile ?? '';
    if (!rel) throw new SeccompProfileError('seccompProfile type Localhost needs a localhostProfile');
    if (isAbsolute(rel) || normalize(rel).split('/').includes('..')) throw new SeccompProfileError(`seccompProfile localhostProfile "${rel}" must be a path inside --seccomp-profile-root`);
    return { profileType: 'Localhost', localhostRef: join(root, rel) };
  }
  throw new SeccompProfileError(`seccompProfile type "${p.type}" is not RuntimeDefault, Unconfined or Localhost`);
}

export function podSeccomp(pod: Pod, root: string): SeccompProfile | undefined {
  return fromApi((pod.spec?.securityContext as { seccompProfile?: ApiSeccomp } | undefined)?.seccompProfile, root);
}

export function containerSeccomp(pod: Pod, c: Container, root: string): SeccompProfile | undefined {
  const own = (c.securityContext as { seccompProfile?: ApiSeccomp } | undefined)?.seccompProfile;
  return fromApi(own, root) ?? podSeccomp(pod, root);
}
