/**
 * SecurityContextDeny: refuses pods that set the security-context fields that once let a pod
 * choose its own identity (pod: supplementalGroups, seLinuxOptions, runAsUser, fsGroup;
 * init and regular containers: seLinuxOptions, runAsUser), with Kubernetes' messages, on create and update.
 */
import { errors } from '../../../api/meta/status.js';
import { isPod, type AdmissionAttributes, type AdmissionPlugin } from './types.js';
import { podSpec } from './pod-shape.js';

function refusal(a: AdmissionAttributes): string | undefined {
  const spec = podSpec(a.object);
  const psc = spec.securityContext;
  if (psc) {
    if (psc.supplementalGroups != null) return 'pod.Spec.SecurityContext.SupplementalGroups is forbidden';
    if (psc.seLinuxOptions != null) return 'pod.Spec.SecurityContext.SELinuxOptions is forbidden';
    if (psc.runAsUser != null) return 'pod.Spec.SecurityContext.RunAsUser is forbidden';
    if (psc.fsGroup != null) return 'pod.Spec.SecurityContext.FSGroup is forbidden';
  }
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
    if (c.securityContext?.seLinuxOptions != null) return 'SecurityContext.SELinuxOptions is forbidden';
    if (c.securityContext?.runAsUser != null) return 'SecurityContext.RunAsUser is forbidden';
  }
  return undefined;
}

export function securityContextDeny(): AdmissionPlugin {
  return {
    name: 'SecurityContextDeny',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && sub === '',
    validate(a) {
      const why = refusal(a);
      if (why) throw errors.admissionForbidden({ resource: 'pods', name: a.object?.metadata?.name ?? a.name }, why);
    },
  };
}
