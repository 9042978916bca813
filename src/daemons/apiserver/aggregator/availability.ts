/**
 * The Available condition of APIServices, as Kubernetes' AvailableConditionController sets it:
 * local ones are always available (reason Local); a service-backed one is available when its
 * service resolves to an address (else ServiceNotFound, ServicePortError, EndpointsNotFound,
 * MissingEndpoints) and GET /apis/<group>/<version> there answers 2xx within 5 s, asked as
 * system:kube-aggregator in system:masters (else FailedDiscoveryCheck). The answer of that
 * check (an APIResourceList) is kept for discovery. The status is written only when it changed.
 */
import * as https from 'node:https';
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { apiservices } from '../../../api/resources/apiregistration/apiservices.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { metaTime } from '../../../api/meta/time.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import { BackendError, identityHeaders, resolveBackend, serviceRefOf, type BackendAgents, type BackendTarget, type IdentityHeaderNames } from './backend.js';

const CHECK_TIMEOUT_MS = 5000;

export interface Condition { type: string; status: string; reason: string; message: string; lastTransitionTime?: string }

export interface CheckDeps {
  registry: ResourceRegistry;
  agents: BackendAgents;
  routeToEndpoints: boolean;
  names: IdentityHeaderNames;
}

/** Outcome of one check: the condition, and the discovery document when the backend answered. */
export interface CheckResult { condition: Condition; resources?: Record<string, unknown>[] }

/** GET url through `agent`; the parsed JSON body of a 2xx answer, or an Error. */
function getJson(agent: https.Agent, target: BackendTarget, path: string, names: IdentityHeaderNames): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: target.host, port: target.port, path, method: 'GET', agent,
      servername: /^[\d.]+$|:/.test(target.serverName) ? undefined : target.serverName,
      headers: { accept: 'application/json', ...identityHeaders({ name: 'system:kube-aggregator', groups: ['system:masters'] }, names) },
      timeout: CHECK_TIMEOUT_MS,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const code = res.statusCode ?? 0;
        if (code < 200 || code >= 300) { reject(new Error(`bad status from https://${target.host}:${target.port}${path}: ${code}`)); return; }
        try { resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))); } catch { resolve(undefined); }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CHECK_TIMEOUT_MS / 1000}s`)));
    req.on('error', reject);
    req.end();
  });
}

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
    const body = await getJson(d.agents.agentFor(apiService), target, path, d.names) as { resources?: unknown } | undefined;
    const resources = Array.isArray(body?.resources) ? body!.resources.filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null) : [];
    return { condition: { type: 'Available', status: 'True', reason: 'Passed', message: 'all checks passed' }, resources };
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
