/**
 * DenyEscalatingExec and DenyExecOnPrivileged: `kubectl exec` and `attach` into a pod that runs
 * privileged (any init or regular container), or — for DenyEscalatingExec — shares the host's
 * PID or IPC namespace, are refused at connect time, with Kubernetes' messages.
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { isPod, type AdmissionPlugin } from './types.js';
import { podSpec } from './pod-shape.js';

function refusal(pod: KubeObject, hostNamespaces: boolean): string | undefined {
  const spec = podSpec(pod);
  if ([...(spec.initContainers ?? []), ...(spec.containers ?? [])].some((c) => c.securityContext?.privileged === true)) {
    return 'cannot exec into or attach to a privileged container';
  }
  if (hostNamespaces && spec.hostIPC) return 'cannot exec into or attach to a container using host IPC';
  if (hostNamespaces && spec.hostPID) return 'cannot exec into or attach to a container using host pid';
  return undefined;
}

function denyExec(name: string, hostNamespaces: boolean): AdmissionPlugin {
  return {
    name,
    handles: () => false,
    handlesConnect: (def, sub) => isPod(def) && (sub === 'exec' || sub === 'attach'),
    connect(a) {
      const why = a.object && refusal(a.object, hostNamespaces);
      if (why) throw errors.admissionForbidden({ resource: 'pods', name: a.name }, why);
    },
  };
}

export const denyEscalatingExec = (): AdmissionPlugin => denyExec('DenyEscalatingExec', true);
export const denyExecOnPrivileged = (): AdmissionPlugin => denyExec('DenyExecOnPrivileged', false);
