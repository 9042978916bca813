/**
 * Pod admission on the node: a pod is admitted when the node has room for it under
 * --max-pods (pods already admitted and not finished count). A rejected pod is never run; its
 * status says Failed with reason OutOfpods, as Kubernetes reports it.
 */
import type { PodStatusV1 } from './pod-types.js';
import { kubeTime } from './pod-types.js';

export interface AdmissionResult { admit: boolean; reason?: string; message?: string }

export function admitPod(activePods: number, maxPods: number): AdmissionResult {
  if (activePods + 1 > maxPods) {
    return { admit: false, reason: 'OutOfpods', message: `Node didn't have enough resource: pods, requested: 1, used: ${activePods}, capacity: ${maxPods}` };
  }
  return { admit: true };
}

export function rejectedStatus(reason: string, message: string, hostIp: string, nowMs = Date.now()): PodStatusV1 {
  return {
    phase: 'Failed', reason, message, hostIP: hostIp, hostIPs: [{ ip: hostIp }], startTime: kubeTime(nowMs),
    conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: kubeTime(nowMs) }],
  };
}
