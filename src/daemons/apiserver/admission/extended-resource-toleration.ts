/**
 * ExtendedResourceToleration: a pod requesting an extended resource (example.com/gpu) tolerates
 * the NoSchedule taint named after it, so nodes with such hardware can be tainted to keep other
 * pods off. Tolerations the pod already has that cover it are kept; added ones are sorted by name.
 */
import { isPod, type AdmissionPlugin } from './types.js';
import { podSpec, type TolerationShape } from './pod-shape.js';

/** Kubernetes' IsExtendedResourceName: a domain-qualified name outside kubernetes.io, not a quota `requests.` name. */
export function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/') || name.includes('kubernetes.io/')) return false;
  if (name.startsWith('requests.')) return false;
  return /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)\/([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/.test(name);
}

/** Whether `have` already tolerates every taint `want` (an Exists toleration) tolerates. */
function covers(have: TolerationShape, want: TolerationShape): boolean {
  if ((have.effect ?? '') !== '' && have.effect !== want.effect) return false;
  if ((have.operator ?? 'Equal') !== 'Exists') return false;
  return (have.key ?? '') === '' || have.key === want.key;
}

export function extendedResourceToleration(): AdmissionPlugin {
  return {
    name: 'ExtendedResourceToleration',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && sub === '',
    admit(a) {
      const spec = podSpec(a.object);
      const names = new Set<string>();
      for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
        for (const r of Object.keys(c.resources?.requests ?? {})) if (isExtendedResourceName(r)) names.add(r);
      }
      if (!names.size) return;
      const have = spec.tolerations ?? [];
      const add = [...names].sort()
        .map((key): TolerationShape => ({ key, operator: 'Exists', effect: 'NoSchedule' }))
        .filter((t) => !have.some((h) => covers(h, t)));
      if (add.length) spec.tolerations = [...have, ...add];
    },
  };
}
