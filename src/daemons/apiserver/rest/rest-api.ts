/**
 * The REST layer of the API server: discovery and every resource request (CRUD, list, watch,
 * status/scale/binding/eviction/finalize). The server's filter chain calls `handle` for
 * resource and discovery requests and `handleUpgrade` for upgrades (WebSocket watch; streaming
 * subresources registered by other components through addSubresourceHandler).
 *
 * Lifecycle: start() repairs the service IP/port allocations, creates the system namespaces,
 * serves the custom resources of the stored CRDs (and keeps following them) and starts the
 * `kubernetes` service reconciler; stop() withdraws this server's endpoint.
 */
import type { Duplex } from 'node:stream';
import { pino, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { ApiError, errors } from '../../../api/meta/status.js';
import { findResource, registerResource, unregisterResource } from '../../../api/resources/registry.js';
import { setEventTtlSeconds } from '../../../api/resources/core/events.js';
import type { ResourceDefinition } from '../../../api/resources/types.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import { writeStatusToSocket } from '../filters/write-status.js';
import { AllocationRepair } from '../registry/allocation-repair.js';
import { ApiserverIdentity } from '../registry/apiserver-identity.js';
import { IpAllocator } from '../registry/ip-allocator.js';
import { KubernetesServiceReconciler } from '../registry/kubernetes-service.js';
import { PortAllocator } from '../registry/port-allocator.js';
import { AdmissionChain } from '../admission/chain.js';
import { rbacEscalationCheck } from '../admission/rbac-escalation.js';
import { ResourceRegistry } from '../registry/resource-registry.js';
import { ServiceAllocation } from '../registry/service-allocation.js';
import { ensureSystemNamespaces } from '../registry/system-namespaces.js';
import { ensureSystemPriorityClasses } from '../registry/system-priority-classes.js';
import { handleDelete, handleDeleteCollection } from './delete-handlers.js';
import { Discovery, type ExternalGroup, type GroupInfo } from './discovery.js';
import { ApiEnablement } from './enablement.js';
import { allowCompression, toApiError, writeError, writeObject } from './http-io.js';
import { negotiateOutput } from './negotiate.js';
import { handleGet, handleList } from './read-handlers.js';
import { headerOf, warningHeaders, type Scope } from './scope.js';
import { handleEviction } from './eviction.js';
import { handleBinding, handleFinalize, handleScale, unsupportedSubresource } from './subresource-handlers.js';
import type { RestDeps } from './types.js';
import { handleWatch, handleWebSocketWatch } from './watch-handler.js';
import { OpenApiHandler, type ExternalOpenApi } from './openapi-handler.js';
import { handleCreate, handlePatch, handleUpdate } from './write-handlers.js';
import { queryBool } from '../request-info.js';
import { CrdLoop } from '../crd/crd-loop.js';

export type SubresourceHandler = (ctx: RequestContext, req: ApiRequest, res: ApiResponse, target: SubresourceTarget) => Promise<void>;
export type SubresourceUpgradeHandler = (ctx: RequestContext, req: ApiRequest, socket: Duplex, head: Buffer, target: SubresourceTarget) => void;
export interface SubresourceTarget { def: ResourceDefinition; namespace: string; name: string; subresource: string; registry: ResourceRegistry }

export interface RestApi {
  handle(ctx: RequestContext, req: ApiRequest, res: ApiResponse): Promise<void>;
  handleUpgrade(ctx: RequestContext, req: ApiRequest, socket: Duplex, head: Buffer): void;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Other components serve pods/log, pods/exec, serviceaccounts/token ... through these. */
  addSubresourceHandler(group: string, resource: string, subresource: string, handler: SubresourceHandler, upgrade?: SubresourceUpgradeHandler): void;
  /**
   * A resource served entirely by another component (SelfSubjectAccessReview, TokenReview ...):
   * the definition is registered for discovery and every request to it goes to `handler`.
   */
  addResourceHandler(def: ResourceDefinition, handler: SubresourceHandler): void;
  /** The generic registry (internal loops and other components write through it). */
  readonly registry: ResourceRegistry;
  /** The groups this server serves itself, with their enabled versions (discovery's list). */
  servedGroups(): GroupInfo[];
  /** Extension servers' groups (the aggregator's) for discovery and OpenAPI. */
  setExternalApis(source: ExternalApis): void;
  /** Calls `cb` whenever the served groups change (a custom resource served or withdrawn). */
  onServedGroupsChange(cb: () => void): void;
}

/** What the aggregator tells discovery and OpenAPI about the extension servers. */
export interface ExternalApis {
  groups(): readonly ExternalGroup[];
  openapi: ExternalOpenApi;
}

const notFoundPath = (): ApiError => new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});

/** The query without `limit` and `continue`: lists are whole while the APIListChunking gate is off. */
function withoutPaging(query: URLSearchParams): URLSearchParams {
  if (!query.has('limit') && !query.has('continue')) return query;
  const q = new URLSearchParams(query);
  q.delete('limit');
  q.delete('continue');
  return q;
}

export function createRestApi(deps: RestDeps): RestApi {
  const log: Logger = deps.log ?? pino({ level: 'silent' });
  const cfg = deps.config;
  setEventTtlSeconds(cfg.eventTtl / 1000);
  const enablement = new ApiEnablement(cfg.runtimeConfig);
  const discovery = new Discovery(enablement, () => `${cfg.advertiseAddress}:${cfg.securePort}`);
  const ips = new IpAllocator(deps.store, cfg.serviceClusterIpRange);
  const nodePorts = new PortAllocator(deps.store, cfg.serviceNodePortRange.base, cfg.serviceNodePortRange.size);
  const services = new ServiceAllocation(ips, nodePorts);
  const allocationRepair = new AllocationRepair({ store: deps.store, ips, nodePorts, log: log.child({ component: 'allocation-repair' }), ...(cfg.allocationRepairIntervalMs ? { intervalMs: cfg.allocationRepairIntervalMs } : {}) });
  const admission = new AdmissionChain(cfg.admissionPlugins ?? ['NamespaceLifecycle'], {
    store: deps.store,
    log: log.child({ component: 'admission' }),
    served: (def, version) => enablement.resourceEnabled(def, version),
    ...(cfg.proxyClientCert ? { webhookClientCert: cfg.proxyClientCert } : {}),
    ...(deps.authorizer ? { authorizer: deps.authorizer } : {}),
    createNamespace: async (name) => {
      const nsDef = findResource('', 'v1', 'namespaces')!;
      try {
        await registry.create(nsDef, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 409)) throw e;
      }
    },
    chargeQuota: (quota, used) => registry.updateStatusAt(findResource('', 'v1', 'resourcequotas')!, quota, { used }),
    ...(cfg.admissionPluginConfigs ? { pluginConfigs: cfg.admissionPluginConfigs } : {}),
  }, // RBAC's escalation check is no plugin of the options: it runs whenever the server authorizes.
  deps.authorizer ? [rbacEscalationCheck({ store: deps.store, authorizer: deps.authorizer })] : []);
  for (const note of admission.startNotes) log.warn(note);
  const registry: ResourceRegistry = new ResourceRegistry(deps.store, { repairMalformedUpdates: cfg.repairMalformedUpdates, garbageCollection: cfg.enableGarbageCollector !== false, services, admission, log, storageVersions: cfg.storageVersions });
  const reconciler = new KubernetesServiceReconciler({
    registry, store: deps.store, ips, advertiseAddress: cfg.advertiseAddress, securePort: cfg.securePort,
    reconcilerType: cfg.endpointReconcilerType, apiserverCount: cfg.apiserverCount, nodePort: cfg.coreServiceNodePort ?? 0,
    intervalMs: cfg.endpointReconcileIntervalMs ?? 10_000, log,
  });
  const identity = new ApiserverIdentity({ registry, securePort: cfg.securePort, log: log.child({ component: 'apiserver-identity' }) });
  const openapi = new OpenApiHandler({ enabled: (def, version) => enablement.resourceEnabled(def, version), log: log.child({ component: 'openapi' }) });
  const servedGroupsListeners: Array<() => void> = [];
  const crds = new CrdLoop({
    registry, log: log.child({ component: 'crd' }),
    serve(group, plural, def) {
      if (def) registerResource(def); else unregisterResource(group, plural);
      openapi.invalidate();
      for (const cb of servedGroupsListeners) cb();
    },
  });
  const wss = new WebSocketServer({ noServer: true });
  const subHandlers = new Map<string, { handler: SubresourceHandler; upgrade?: SubresourceUpgradeHandler }>();
  const subKey = (g: string, r: string, s: string): string => `${g}/${r}/${s}`;
  /** Handlers serving a whole resource, by its definition (the one registered with it, which findResource returns). */
  const resourceHandlers = new Map<ResourceDefinition, SubresourceHandler>();

  function discoveryResponse(ctx: RequestContext, req: ApiRequest, res: ApiResponse): boolean {
    const parts = ctx.info.path.replace(/^\/+|\/+$/g, '').split('/');
    const pretty = queryBool(ctx.query.get('pretty')) === true;
    if (parts[0] === 'api' && parts.length === 1) {
      const fmt = negotiateOutput(headerOf(req, 'accept'), 'discovery', { pretty });
      writeObject(res, 200, fmt.target === 'discovery' ? discovery.aggregated(true, fmt.asVersion as 'v2' | 'v2beta1') : discovery.apiVersions(), fmt);
      return true;
    }
    if (parts[0] === 'apis' && parts.length === 1) {
      const fmt = negotiateOutput(headerOf(req, 'accept'), 'discovery', { pretty });
      writeObject(res, 200, fmt.target === 'discovery' ? discovery.aggregated(false, fmt.asVersion as 'v2' | 'v2beta1') : discovery.apiGroupList(), fmt);
      return true;
    }
    let body: Record<string, unknown> | undefined;
    if (parts[0] === 'api' && parts.length === 2) body = discovery.apiResourceList('', parts[1]!);
    else if (parts[0] === 'apis' && parts.length === 2) body = discovery.apiGroupOf(parts[1]!);
    else if (parts[0] === 'apis' && parts.length === 3) body = enablement.versionEnabled(parts[1]!, parts[2]!) ? discovery.apiResourceList(parts[1]!, parts[2]!) : undefined;
    else return false;
    if (!body) throw notFoundPath();
    const fmt = negotiateOutput(headerOf(req, 'accept'), 'resource', { pretty });
    writeObject(res, 200, body, fmt.target === 'object' ? fmt : { mediaType: 'application/json', target: 'object', pretty });
    return true;
  }

  function scopeFor(ctx: RequestContext, req: ApiRequest, res: ApiResponse): Scope {
    const info = ctx.info;
    const def = findResource(info.apiGroup, info.apiVersion, info.resource);
    if (!def || !enablement.resourceEnabled(def, info.apiVersion) || (info.apiPrefix === 'api') !== (info.apiGroup === '')) throw notFoundPath();
    return {
      ctx, req, res, def, version: info.apiVersion, namespace: def.namespaced ? info.namespace : '', name: info.name,
      subresource: info.subresource, registry, query: cfg.listChunking === false ? withoutPaging(ctx.query) : ctx.query, warnings: [],
    };
  }

  function requireVerb(s: Scope, verb: string): void {
    if (!s.def.verbs.includes(verb)) throw errors.methodNotAllowed(String(s.req.method), s.def.plural);
  }

  async function dispatch(ctx: RequestContext, s: Scope): Promise<void> {
    const verb = ctx.info.verb;
    // A name without a namespace names nothing for a namespaced resource; a list or watch across
    // namespaces takes its "name" from `fieldSelector=metadata.name=...` and is served.
    if (s.def.namespaced && s.name && !s.namespace && verb !== 'list' && verb !== 'watch') throw notFoundPath();
    if (s.subresource) {
      const custom = subHandlers.get(subKey(s.def.group, s.def.plural, s.subresource));
      if (custom) { await custom.handler(ctx, s.req, s.res, { def: s.def, namespace: s.namespace, name: s.name, subresource: s.subresource, registry }); return; }
      // status, and the subresources written like it (CSR approval): read, replace, patch.
      if (s.subresource === 'status' || s.def.subresources?.statusLike?.includes(s.subresource)) {
        if (s.subresource === 'status' && !s.def.subresources?.status) throw unsupportedSubresource(s);
        if (verb === 'get') return handleGet(s);
        if (verb === 'update') return handleUpdate(s);
        if (verb === 'patch') return handlePatch(s);
        throw errors.methodNotAllowed(String(s.req.method), `${s.def.plural}/${s.subresource}`);
      }
      switch (s.subresource) {
        case 'scale': return handleScale(s, verb);
        case 'binding':
          if (s.def.group === '' && s.def.plural === 'pods' && verb === 'create') return handleBinding(s);
          break;
        case 'eviction':
          if (s.def.group === '' && s.def.plural === 'pods' && verb === 'create') return handleEviction(s);
          break;
        case 'finalize':
          if (s.def.group === '' && s.def.plural === 'namespaces' && verb === 'update') return handleFinalize(s);
          break;
      }
      const known = s.def.subresources?.extra?.some((e) => e.name === s.subresource);
      if (known) throw errors.methodNotAllowed(String(s.req.method), `${s.def.plural}/${s.subresource}`);
      throw unsupportedSubresource(s);
    }
    switch (verb) {
      case 'get': requireVerb(s, 'get'); return handleGet(s);
      case 'list': requireVerb(s, 'list'); return handleList(s);
      case 'watch': requireVerb(s, 'watch'); return handleWatch(s, cfg.minRequestTimeout);
      case 'create':
        requireVerb(s, 'create');
        if (s.name) throw errors.methodNotAllowed('POST', s.def.plural);
        return handleCreate(s);
      case 'update': requireVerb(s, 'update'); if (!s.name) throw errors.methodNotAllowed('PUT', s.def.plural); return handleUpdate(s);
      case 'patch': requireVerb(s, 'patch'); if (!s.name) throw errors.methodNotAllowed('PATCH', s.def.plural); return handlePatch(s);
      case 'delete': requireVerb(s, 'delete'); return handleDelete(s);
      case 'deletecollection': requireVerb(s, 'deletecollection'); return handleDeleteCollection(s, cfg.deleteCollectionWorkers);
      default: throw errors.methodNotAllowed(String(s.req.method), s.def.plural);
    }
  }

  return {
    registry,

    servedGroups: () => discovery.groups(),

    onServedGroupsChange(cb) {
      servedGroupsListeners.push(cb);
    },

    setExternalApis(source) {
      discovery.setExternal(() => source.groups());
      openapi.setExternal(source.openapi);
    },

    async handle(ctx, req, res) {
      let scope: Scope | undefined;
      try {
        if (cfg.responseCompression) allowCompression(req, res);
        if (!ctx.info.isResourceRequest) {
          if (openapi.handles(ctx.info.path)) { openapi.serve(req, res, ctx.info.path, ctx.query); return; }
          if (!discoveryResponse(ctx, req, res)) throw notFoundPath();
          return;
        }
        scope = scopeFor(ctx, req, res);
        const whole = resourceHandlers.get(scope.def);
        if (whole) { await whole(ctx, req, res, { def: scope.def, namespace: scope.namespace, name: scope.name, subresource: scope.subresource, registry }); return; }
        await dispatch(ctx, scope);
      } catch (e) {
        const err = toApiError(e);
        if (err.code >= 500) log.error({ err: e, path: ctx.info.path }, 'request failed');
        ctx.audit?.noteStatus(err.status);
        if (!res.headersSent) {
          // Warnings gathered before the failure (an admission webhook's, say) go out with it, as in Kubernetes.
          if (scope?.warnings.length) for (const [k, v] of Object.entries(warningHeaders(scope))) res.setHeader(k, v);
          writeError(res, err);
        } else if (!res.writableEnded) res.end();
      }
    },

    handleUpgrade(ctx, req, socket, head) {
      try {
        const info = ctx.info;
        if (!info.isResourceRequest) throw notFoundPath();
        const def = findResource(info.apiGroup, info.apiVersion, info.resource);
        if (!def) throw notFoundPath();
        if (info.subresource) {
          const custom = subHandlers.get(subKey(def.group, def.plural, info.subresource));
          if (!custom?.upgrade) throw notFoundPath();
          custom.upgrade(ctx, req, socket, head, { def, namespace: def.namespaced ? info.namespace : '', name: info.name, subresource: info.subresource, registry });
          return;
        }
        if (info.verb !== 'watch') throw errors.badRequest('only watch requests may be upgraded to WebSocket');
        wss.handleUpgrade(req as never, socket, head, (ws) => {
          const s: Scope = {
            ctx, req, res: undefined as never, def, version: info.apiVersion, namespace: def.namespaced ? info.namespace : '',
            name: info.name, subresource: '', registry, query: ctx.query, warnings: [],
          };
          handleWebSocketWatch(s, ws, cfg.minRequestTimeout).catch((e: unknown) => {
            const err = toApiError(e);
            if (ws.readyState === ws.OPEN) { ws.send(JSON.stringify({ type: 'ERROR', object: err.status })); ws.close(1000); }
          });
        });
      } catch (e) {
        writeStatusToSocket(socket, toApiError(e));
      }
    },

    addSubresourceHandler(group, resource, subresource, handler, upgrade) {
      subHandlers.set(subKey(group, resource, subresource), { handler, upgrade });
    },

    addResourceHandler(def, handler) {
      registerResource(def);
      for (const d of resourceHandlers.keys()) if (d.group === def.group && d.plural === def.plural) resourceHandlers.delete(d);
      resourceHandlers.set(def, handler);
      openapi.invalidate();
    },

    async start() {
      // Other API servers may be allocating meanwhile: a compare-and-swap repair, then periodic ones.
      await allocationRepair.runOnce();
      allocationRepair.start();
      await ensureSystemNamespaces(registry);
      await ensureSystemPriorityClasses(registry);
      await crds.start();
      await reconciler.start();
      await identity.start();
      log.info({ serviceClusterIpRange: ips.cidr.text, nodePorts: nodePorts.rangeText() }, 'REST API started');
    },

    async stop() {
      identity.stop();
      await allocationRepair.stop();
      await reconciler.stop();
      await crds.stop();
      wss.close();
    },
  };
}
