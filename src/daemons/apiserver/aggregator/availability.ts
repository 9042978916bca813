/**
 * The Available condition of APIServices, as Kubernetes' AvailableConditionController sets it:
 * local ones are always available (reason Local); a service-backed one is available when its
 * service resolves to an address (else ServiceNotFound, ServicePortError, EndpointsNotFound,
 * MissingEndpoints) and GET /apis/<group>/<version> there answers 2xx within 5 s, asked as
 * system:kube-aggregator in system:masters (else FailedDiscoveryCheck). The answer of that
 * check (an APIResourceList) is kept for discovery. The status is written only when it changed.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { apiservices } from '../../../api/resources/apiregistration/apiservices.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { metaTime } from '../../../api/meta/time.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import { BackendError, resolveBackend, serviceRefOf, type BackendAgents, type BackendTarget, type IdentityHeaderNames } from './backend.js';
import { backendGet } from './backend-get.js';

export interface Condition { type: string; status: string; reason: string; message: string; lastTransitionTime?: string }

export interface CheckDeps {
  registry: ResourceRegistry;
  agents: BackendAgents;
  routeToEndpoints: boolean;
  names: IdentityHeaderNames;
}

/** Outcome of one check: the condition, and the discovery document when the backend answered. */
export interface CheckResult { condition: Condition; resources?: Record<string, unknown>[]; target?: BackendTarget }

/** Checks one APIService now. */
export async function checkApiService(d: CheckDeps, apiService: KubeObject): Promise<CheckResult> {
  const ref = serviceRefOf(apiService);
  if (!ref) return { condition: { type: 'Available', status: 'True', reason: 'Local', message: 'Local APIServices are always available' } };
  const spec = (apiService.spec ?? {}) as Record<string, unknown>;
  const path = `/apis/${String(spec.group ?? '')}/${String(spec.version ?? '')}`;
  let target: BackendTarget;
  try {
    target = await resolveBackend(d.registry, ref, d.routeToEndpoints);
  } catch (e) {
    if (e instanceof BackendError) return { condition: { type: 'Available', status: 'False', reason: e.reason, message: e.message } };
    throw e;
  }
  try {
    const raw = await backendGet(d.agents.agentFor(apiService), target, path, d.names);
    let body: { resources?: unknown } | undefined;
    try { body = JSON.parse(raw.toString('utf8')) as { resources?: unknown }; } catch { body = undefined; }
    const resources = Array.isArray(body?.resources) ? body!.resources.filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null) : [];
    return { condition: { type: 'Available', status: 'True', reason: 'Passed', message: 'all checks passed' }, resources, target };
  } catch (e) {
    return { condition: { type: 'Available', status: 'False', reason: 'FailedDiscoveryCheck', message: `failing or missing response from https://${target.host}:${target.port}${path}: ${(e as Error).message}` } };
  }
}

/** The Available condition an APIService has now, if any. */
export function availableCondition(apiService: KubeObject): Condition | undefined {
  const conds = ((apiService.status as Record<string, unknown> | undefined)?.conditions ?? []) as Condition[];
  return Array.isArray(conds) ? conds.find((c) => c && c.type === 'Available') : undefined;
}

/** Writes `cond` as the Available condition unless it already says the same. */
export async function writeAvailable(registry: ResourceRegistry, apiService: KubeObject, cond: Condition, log: Logger): Promise<void> {
  const had = availableCondition(apiService);
  if (had && had.status === cond.status && had.reason === cond.reason && had.message === cond.message) return;
  const next: Condition = { ...cond, lastTransitionTime: had && had.status === cond.status && had.lastTransitionTime ? had.lastTransitionTime : metaTime() };
  const others = (((apiService.status as Record<string, unknown> | undefined)?.conditions ?? []) as Condition[]).filter((c) => c && c.type !== 'Available');
  try {
    await registry.updateStatusAt(apiservices, apiService, { conditions: [...others, next] });
  } catch (e) {
    // A newer object (Conflict) or a deleted one: the next round sees it.
    if (!isApiError(e, 'Conflict') && !isApiError(e, 'NotFound')) log.warn({ err: (e as Error).message, name: apiService.metadata?.name }, 'cannot write APIService status');
  }
}
