/**
 * Serves componentstatuses through `addResourceHandler`: get (one component) and list (all,
 * probed in parallel) in JSON, YAML, protobuf, Table or PartialObjectMetadata; 404 for a
 * name that is not a component; 405 for any other verb. Every answer, errors included,
 * carries the deprecation warning.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import { warningHeaderValues } from '../../../api/codec/warning-header.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { parseOverride, type BackendSet } from '../../../storage/backend-factory.js';
import type { Backend } from '../../../storage/interface.js';
import { queryBool } from '../request-info.js';
import { writeObject } from '../rest/http-io.js';
import { negotiateOutput } from '../rest/negotiate.js';
import { partialList, partialObject } from '../rest/partial-metadata.js';
import type { RestApi, SubresourceHandler } from '../rest/rest-api.js';
import { headerOf } from '../rest/scope.js';
import { buildTable, parseIncludeObject } from '../rest/table.js';
import { componentStatuses, DEPRECATION_WARNING } from './definition.js';
import { DEFAULT_PROBE_TIMEOUT_MS, httpComponent, storageComponent, type Component } from './probes.js';

export interface ComponentStatusOptions {
  /**
   * The scheduler's health URL: http://127.0.0.1:10251/healthz, its insecure --port default, as
   * Kubernetes of the reference's time probed it (later versions probe https on 10259).
   */
  schedulerUrl?: string;
  /** The controller-manager's health URL: http://127.0.0.1:10252/healthz (its --port default; later Kubernetes: https on 10257). */
  controllerManagerUrl?: string;
  /** The storage entries, in order (see storageComponents). */
  storage?: readonly Component[];
  /** Per-probe deadline; Kubernetes' 20 s by default. */
  probeTimeoutMs?: number;
}

/**
 * One entry per distinct storage backend, as Kubernetes lists one per storage configuration:
 * `etcd-0` for the default servers then `etcd-1`... for overrides with other servers; the
 * embedded LevelDB store (no --kvstore-servers) is `kvstore-0`. Each is checked the way
 * /healthz checks storage (reading the current revision).
 */
export function storageComponents(servers: readonly string[], overrides: readonly string[], storage: BackendSet): Component[] {
  const backends: Backend[] = [storage.default];
  for (const o of overrides.map((x) => x.trim()).filter(Boolean).map(parseOverride)) {
    const b = storage.for(o.group, o.resource);
    if (!backends.includes(b)) backends.push(b);
  }
  const embedded = servers.every((s) => s.trim() === '');
  return backends.map((b, i) => storageComponent(i === 0 && embedded ? 'kvstore-0' : `etcd-${i}`, () => b.currentRevision()));
}

function componentsOf(o: ComponentStatusOptions): Component[] {
  return [
    httpComponent('scheduler', o.schedulerUrl ?? 'http://127.0.0.1:10251/healthz'),
    httpComponent('controller-manager', o.controllerManagerUrl ?? 'http://127.0.0.1:10252/healthz'),
    ...(o.storage ?? []),
  ];
}

async function statusOf(c: Component, timeoutMs: number): Promise<KubeObject> {
  const condition = await c.probe(timeoutMs);
  return { kind: 'ComponentStatus', apiVersion: 'v1', metadata: { name: c.name, creationTimestamp: null }, conditions: [condition] };
}

function componentStatusHandler(o: ComponentStatusOptions): SubresourceHandler {
  const components = componentsOf(o);
  const timeoutMs = o.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  return async (ctx, req, res) => {
    res.setHeader('Warning', warningHeaderValues([DEPRECATION_WARNING]));
    const { verb, name, subresource } = ctx.info;
    if (subresource) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
    if (verb !== 'get' && verb !== 'list') throw errors.methodNotAllowed(String(req.method), componentStatuses.plural);
    const fmt = negotiateOutput(headerOf(req, 'accept'), 'resource', { protobuf: true, pretty: queryBool(ctx.query.get('pretty')) === true });

    let items: KubeObject[];
    if (verb === 'get') {
      const c = components.find((x) => x.name === name);
      if (!c) throw errors.notFound({ group: '', resource: componentStatuses.plural, name });
      items = [await statusOf(c, timeoutMs)];
    } else {
      items = await Promise.all(components.map((c) => statusOf(c, timeoutMs)));
    }

    if (fmt.target === 'table') {
      const table = buildTable(componentStatuses, items.map((i) => ({ stored: i, served: i })), {
        include: parseIncludeObject(ctx.query.get('includeObject')), metaVersion: fmt.asVersion ?? 'v1',
      });
      writeObject(res, 200, table, fmt);
    } else if (verb === 'get') {
      writeObject(res, 200, fmt.target === 'partial' ? partialObject(items[0]!, fmt.asVersion) : items[0], fmt);
    } else if (fmt.target === 'partial') {
      writeObject(res, 200, partialList(items, {}, fmt.asVersion), fmt);
    } else {
      writeObject(res, 200, { kind: componentStatuses.listKind, apiVersion: 'v1', metadata: {}, items }, fmt);
    }
  };
}

/** Registers componentstatuses with the REST layer (again: the last registration wins). */
export function installComponentStatuses(rest: Pick<RestApi, 'addResourceHandler'>, o: ComponentStatusOptions = {}): void {
  rest.addResourceHandler(componentStatuses, componentStatusHandler(o));
}
