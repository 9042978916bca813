/**
 * POST pods/NAME/eviction: deletes the pod with the Eviction's DeleteOptions when its
 * PodDisruptionBudget allows it, as Kubernetes' eviction subresource does.
 *
 * - A pod that is Pending, Succeeded or Failed, or already being deleted, goes at once: evicting
 *   it disrupts nothing.
 * - No budget selects the pod: it goes. More than one: 500 (Kubernetes does not support that).
 * - The budget's status must be current (status.observedGeneration ≥ metadata.generation, which
 *   the controller manager's disruption controller writes), else 429 and the client retries.
 * - An unready pod goes without using the budget when the budget is healthy enough
 *   (currentHealthy ≥ desiredHealthy > 0), or always with unhealthyPodEvictionPolicy AlwaysAllow.
 * - Otherwise status.disruptionsAllowed must be positive (429 "Cannot evict pod as it would
 *   violate the pod's disruption budget." otherwise, with a DisruptionBudget cause). The budget
 *   is charged first: disruptionsAllowed - 1 and the pod in status.disruptedPods, by
 *   compare-and-swap on its resourceVersion (retried on conflict), then the pod is deleted.
 *   A dry run charges nothing.
 * - Admission sees the create of the Eviction (pods/eviction), before any of this; the pod's
 *   delete that follows is not admitted again.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import { selectorMatches } from '../../../api/resources/common/validation.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { decodeObject } from './codec-adapter.js';
import { answerAfterCommit } from './committed-answer.js';
import { readBody } from './http-io.js';
import { headerOf, parseDryRun, respondRaw, successStatus, type Scope } from './scope.js';
import { nowTimestamp } from '../registry/object-meta.js';
import type { DeleteOptions } from '../registry/resource-registry.js';
import { admissionRequest } from './write-handlers.js';

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Obj : {});
const MAX_ATTEMPTS = 5;

function tooMany(message: string, cause: string): ApiError {
  return new ApiError(429, 'TooManyRequests', message, { causes: [{ reason: 'DisruptionBudget', message: cause }] });
}

function isReady(pod: KubeObject): boolean {
  const conds = Array.isArray(rec(pod.status).conditions) ? rec(pod.status).conditions as unknown[] : [];
  return conds.some((c) => rec(c).type === 'Ready' && rec(c).status === 'True');
}

function disruptsNothing(pod: KubeObject): boolean {
  const phase = rec(pod.status).phase;
  return phase === 'Pending' || phase === 'Succeeded' || phase === 'Failed' || !!pod.metadata?.deletionTimestamp;
}

/** The budgets that select the pod (a missing selector selects nothing). */
async function budgetsOf(s: Scope, pod: KubeObject): Promise<KubeObject[]> {
  const def = findResource('policy', 'v1', 'poddisruptionbudgets')!;
  const res = await s.registry.list(def, { namespace: s.namespace });
  return res.items.filter((b) => rec(b.spec).selector !== undefined && selectorMatches(rec(b.spec).selector, pod.metadata?.labels));
}

/** Charges the budget for this eviction (409 when it changed meanwhile), or says why the eviction may not happen. */
async function charge(s: Scope, pod: KubeObject, budget: KubeObject, dryRun: boolean): Promise<void> {
  const def = findResource('policy', 'v1', 'poddisruptionbudgets')!;
  const name = String(budget.metadata?.name ?? '');
  const status = rec(budget.status);
  if (budget.status === undefined || Number(status.observedGeneration ?? 0) < Number(budget.metadata?.generation ?? 0)) {
    throw tooMany('Cannot evict pod as it would violate the pod\'s disruption budget.', `The disruption budget ${name} is still being processed by the server.`);
  }
  const allowed = Number(status.disruptionsAllowed ?? 0);
  if (allowed < 0) throw errors.admissionForbidden({ group: 'policy', resource: 'poddisruptionbudgets', name }, 'pdb disruptions allowed is negative');
  if (allowed === 0) {
    throw tooMany('Cannot evict pod as it would violate the pod\'s disruption budget.',
      `The disruption budget ${name} needs ${Number(status.desiredHealthy ?? 0)} healthy pods and has ${Number(status.currentHealthy ?? 0)} currently`);
  }
  if (dryRun) return;
  // At the budget's resourceVersion, so its disruptedPods (read with it) are still current.
  await s.registry.updateStatusAt(def, budget, {
    disruptionsAllowed: allowed - 1, disruptedPods: { ...rec(status.disruptedPods), [String(pod.metadata?.name)]: nowTimestamp() },
  });
}

export async function handleEviction(s: Scope): Promise<void> {
  const ev = decodeObject(headerOf(s.req, 'content-type'), await readBody(s.req));
  if (ev.metadata?.name && ev.metadata.name !== s.name) throw errors.badRequest(`name in URL does not match name in Eviction object`);
  const d = rec(ev.deleteOptions);
  const dryRun = parseDryRun(s.query, d.dryRun);
  ev.apiVersion ||= 'policy/v1';
  ev.kind ||= 'Eviction';
  const admitting = s.registry.admitSubresource('CREATE', s.def, 'eviction', s, ev, undefined, { dryRun, request: admissionRequest(s) });
  if (admitting) await admitting;
  const opts: DeleteOptions = { dryRun, internal: true };
  if (typeof d.gracePeriodSeconds === 'number' && d.gracePeriodSeconds >= 0) opts.gracePeriodSeconds = d.gracePeriodSeconds;
  const pre = rec(d.preconditions);
  if (pre.uid || pre.resourceVersion) opts.preconditions = { uid: pre.uid as string | undefined, resourceVersion: pre.resourceVersion as string | undefined };
  for (let attempt = 1; ; attempt++) {
    const pod = await s.registry.get(s.def, s.namespace, s.name);
    if (!disruptsNothing(pod)) {
      const budgets = await budgetsOf(s, pod);
      if (budgets.length > 1) throw new ApiError(500, 'InternalError', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
      const budget = budgets[0];
      if (budget) {
        const st = rec(budget.status);
        const unready = !isReady(pod);
        const policy = rec(budget.spec).unhealthyPodEvictionPolicy;
        const healthyEnough = Number(st.desiredHealthy ?? 0) > 0 && Number(st.currentHealthy ?? 0) >= Number(st.desiredHealthy ?? 0);
        if (!(unready && (policy === 'AlwaysAllow' || healthyEnough))) {
          try {
            await charge(s, pod, budget, !!opts.dryRun);
          } catch (e) {
            if (e instanceof ApiError && e.code === 409 && attempt < MAX_ATTEMPTS) continue;
            throw e;
          }
        }
      }
    }
    await s.registry.delete(s.def, s.namespace, s.name, opts);
    answerAfterCommit(s, 201, () => respondRaw(s, 201, successStatus()), successStatus);
    return;
  }
}
