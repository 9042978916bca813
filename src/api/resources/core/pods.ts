/** core/v1 Pod: deep defaults and validation, mostly-immutable spec, graceful deletion. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, STD_VERBS } from '../common/define.js';
import { col, str, num, arr, rec, path } from '../common/table-util.js';
import { deepEqual, isObject } from '../common/validation.js';
import type { KubeObject } from '../types.js';
import { defaultEphemeralContainers, defaultPodSpec, defaultRequestsFromLimits, validateEphemeralContainers, validatePodSpec } from './pod-spec.js';
import { qosClass } from './pod-qos.js';

type Obj = Record<string, unknown>;

/** The STATUS column as kubectl computes it. */
export function podStatusReason(o: KubeObject): string {
  const status = rec(o.status);
  let reason = str(status.reason) || str(status.phase) || 'Pending';
  const inits = arr(status.initContainerStatuses).map(rec);
  const initCount = arr(rec(o.spec).initContainers).length;
  let initializing = false;
  inits.forEach((cs, i) => {
    if (initializing) return;
    const st = rec(cs.state), term = rec(st.terminated), wait = rec(st.waiting);
    if (st.terminated && num(term.exitCode) === 0) return;
    if (st.terminated) reason = str(term.reason) ? `Init:${str(term.reason)}` : (term.signal ? `Init:Signal:${String(term.signal)}` : `Init:ExitCode:${num(term.exitCode)}`);
    else if (st.waiting && str(wait.reason) && str(wait.reason) !== 'PodInitializing') reason = `Init:${str(wait.reason)}`;
    else reason = `Init:${i}/${initCount}`;
    initializing = true;
  });
  if (!initializing) {
    let hasRunning = false;
    for (const cs of arr(status.containerStatuses).map(rec).reverse()) {
      const st = rec(cs.state), term = rec(st.terminated), wait = rec(st.waiting);
      if (st.waiting && str(wait.reason)) reason = str(wait.reason);
      else if (st.terminated && str(term.reason)) reason = str(term.reason);
      else if (st.terminated) reason = term.signal ? `Signal:${String(term.signal)}` : `ExitCode:${num(term.exitCode)}`;
      else if (st.running && cs.ready) hasRunning = true;
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = arr(status.conditions).map(rec).some((c) => c.type === 'Ready' && c.status === 'True');
      reason = ready ? 'Running' : 'NotReady';
    }
  }
  if (o.metadata?.deletionTimestamp) reason = status.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

function podReady(o: KubeObject): string {
  const cs = arr(rec(o.status).containerStatuses).map(rec);
  const total = arr(rec(o.spec).containers).length;
  return `${cs.filter((c) => c.ready === true).length}/${total}`;
}

function podRestarts(o: KubeObject): number {
  return arr(rec(o.status).containerStatuses).map(rec).reduce((n, c) => n + num(c.restartCount), 0);
}

/** The mirror pod annotation: the node agent's copy of a static pod. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

/**
 * A write to pods/ephemeralcontainers (as Kubernetes' ValidatePodEphemeralContainersUpdate):
 * the new list is valid, and every ephemeral container the pod had is still there, unchanged;
 * static pods take none.
 */
function checkEphemeralContainersUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  if (rec(old.metadata?.annotations)[MIRROR_POD_ANNOTATION] !== undefined) return [fieldErrors.forbidden('', 'static pods do not support ephemeral containers')];
  const errs: FieldError[] = [];
  const spec = rec(obj.spec);
  validateEphemeralContainers(spec, 'spec', errs);
  const now = new Map(arr(spec.ephemeralContainers).map(rec).map((c) => [str(c.name), c]));
  for (const c of arr(rec(old.spec).ephemeralContainers).map(rec)) {
    const name = str(c.name);
    const cur = now.get(name);
    if (!cur) errs.push(fieldErrors.forbidden('spec.ephemeralContainers', `existing ephemeral containers ${JSON.stringify(name)} may not be removed`));
    else if (!deepEqual(cur, c)) errs.push(fieldErrors.forbidden('spec.ephemeralContainers', `existing ephemeral containers ${JSON.stringify(name)} may not be changed`));
  }
  return errs;
}

function checkPodUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const ns = structuredClone(rec(obj.spec)), os = rec(old.spec);
  // Mutable parts are copied from the old spec, then anything left different is forbidden.
  for (const list of ['containers', 'initContainers']) {
    const nl = arr(ns[list]), ol = arr(os[list]);
    nl.forEach((c, i) => { if (isObject(c) && isObject(ol[i])) c.image = (ol[i] as Obj).image; });
  }
  ns.activeDeadlineSeconds = os.activeDeadlineSeconds;
  const oldTol = arr(os.tolerations), newTol = arr(ns.tolerations);
  const tolerationsOk = oldTol.every((t) => newTol.some((n) => deepEqual(n, t)));
  if (!tolerationsOk) errs.push(fieldErrors.forbidden('spec.tolerations', 'existing toleration can not be modified except its tolerationSeconds'));
  ns.tolerations = os.tolerations;
  if (!deepEqual(ns, os)) {
    errs.push(fieldErrors.forbidden('spec', 'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)'));
  }
  const oldAds = os.activeDeadlineSeconds, newAds = rec(obj.spec).activeDeadlineSeconds;
  if (oldAds !== undefined && (newAds === undefined || (newAds as number) > (oldAds as number))) {
    errs.push(fieldErrors.invalid('spec.activeDeadlineSeconds', newAds ?? null, 'must be less than or equal to previous value'));
  }
  return errs;
}

export const pods = defineResource({
  group: '', versions: ['v1'], kind: 'Pod', plural: 'pods', namespaced: true,
  shortNames: ['po'], categories: ['all'], verbs: STD_VERBS, hasGeneration: true,
  subresources: {
    status: true,
    // Written like status: only spec.ephemeralContainers changes (prepareForStatusUpdate).
    statusLike: ['ephemeralcontainers'],
    // No `resize`: in-place resizing (InPlacePodVerticalScaling) is not built, so discovery does
    // not offer it, as a Kubernetes server with that gate off does not.
    extra: [
      { name: 'attach', verbs: ['create', 'get'], kind: { group: '', version: 'v1', kind: 'PodAttachOptions' } },
      { name: 'binding', verbs: ['create'], kind: { group: '', version: 'v1', kind: 'Binding' } },
      { name: 'ephemeralcontainers', verbs: ['get', 'patch', 'update'], kind: { group: '', version: 'v1', kind: 'Pod' } },
      { name: 'eviction', verbs: ['create'], kind: { group: 'policy', version: 'v1', kind: 'Eviction' } },
      { name: 'exec', verbs: ['create', 'get'], kind: { group: '', version: 'v1', kind: 'PodExecOptions' } },
      { name: 'log', verbs: ['get'], kind: { group: '', version: 'v1', kind: 'Pod' } },
      { name: 'portforward', verbs: ['create', 'get'], kind: { group: '', version: 'v1', kind: 'PodPortForwardOptions' } },
      { name: 'proxy', verbs: ['create', 'delete', 'get', 'patch', 'update'], kind: { group: '', version: 'v1', kind: 'PodProxyOptions' } },
    ],
  },
  defaults(obj) {
    if (!isObject(obj.spec)) return;
    // The service account, priority and default tolerations come from admission plugins.
    defaultPodSpec(obj.spec);
    defaultRequestsFromLimits(obj.spec);
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    validatePodSpec(obj.spec, 'spec', errs);
    if (old) errs.push(...checkPodUpdate(obj, old));
    else if (arr(rec(obj.spec).ephemeralContainers).length) errs.push(fieldErrors.forbidden('spec.ephemeralContainers', 'cannot be set on create'));
    return errs;
  },
  prepareForCreate(obj) {
    obj.status = { phase: 'Pending', qosClass: qosClass(rec(obj.spec)) };
  },
  prepareForUpdate(obj, old) { obj.status = old.status; },
  prepareForStatusUpdate(obj, old, subresource, requested) {
    if (subresource === 'ephemeralcontainers') {
      // Only the ephemeral containers change (defaulted as any container); the status stays.
      obj.status = old.status;
      const spec: Record<string, unknown> = { ...rec(old.spec) };
      const list = rec(requested?.spec).ephemeralContainers;
      if (list === undefined || list === null) delete spec.ephemeralContainers;
      else spec.ephemeralContainers = structuredClone(list);
      defaultEphemeralContainers(spec);
      obj.spec = spec;
      return;
    }
    // Status writers (node agent, scheduler) may not move a pod to another node.
    obj.spec = old.spec;
  },
  validateStatus(obj, old, subresource) {
    return subresource === 'ephemeralcontainers' ? checkEphemeralContainersUpdate(obj, old) : [];
  },
  gracePeriodSeconds(obj, requested) {
    const spec = rec(obj.spec), phase = str(rec(obj.status).phase);
    if (!spec.nodeName) return 0;
    if (phase === 'Succeeded' || phase === 'Failed') return 0;
    const g = requested ?? (typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 30);
    return Math.max(0, g);
  },
  // A node agent watches its node's pods: with many nodes, each pod event would otherwise be
  // checked against every node's watch.
  watchTriggers: ['spec.nodeName'],
  fieldSelectors: {
    'spec.nodeName': (o) => str(path(o, 'spec.nodeName')),
    'spec.restartPolicy': (o) => str(path(o, 'spec.restartPolicy')),
    'spec.schedulerName': (o) => str(path(o, 'spec.schedulerName')),
    'spec.serviceAccountName': (o) => str(path(o, 'spec.serviceAccountName')),
    'spec.hostNetwork': (o) => String(path(o, 'spec.hostNetwork') === true),
    'status.phase': (o) => str(path(o, 'status.phase')),
    'status.podIP': (o) => str(path(o, 'status.podIP')),
    'status.nominatedNodeName': (o) => str(path(o, 'status.nominatedNodeName')),
  },
  columns: [
    col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.', podReady),
    col('Status', 'string', 'The aggregate status of the containers in this pod.', podStatusReason),
    col('Restarts', 'string', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.', (o) => String(podRestarts(o))),
  ],
  wideColumns: [
    col('IP', 'string', 'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', (o) => str(path(o, 'status.podIP'), '<none>') || '<none>', 1),
    col('Node', 'string', 'NodeName is a request to schedule this pod onto a specific node.', (o) => str(path(o, 'spec.nodeName'), '<none>') || '<none>', 1),
    col('Nominated Node', 'string', 'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.', (o) => str(path(o, 'status.nominatedNodeName'), '<none>') || '<none>', 1),
    col('Readiness Gates', 'string', 'If specified, all readiness gates will be evaluated for pod readiness.', (o) => {
      const gates = arr(path(o, 'spec.readinessGates')).map(rec);
      if (!gates.length) return '<none>';
      const conds = arr(path(o, 'status.conditions')).map(rec);
      const ok = gates.filter((g) => conds.some((c) => c.type === g.conditionType && c.status === 'True')).length;
      return `${ok}/${gates.length}`;
    }, 1),
  ],
});
