/**
 * The aggregation layer (Kubernetes' kube-aggregator, in-process): follows the APIService
 * objects, keeps the local ones (local-apiservices.ts), checks the service-backed ones every
 * interval and after every change (availability.ts), and takes over the requests for their
 * group/versions (`/apis/<group>/<version>...`) once the chain has authenticated and authorized
 * them: those are proxied to the extension server (proxy.ts). Discovery (/apis, aggregated
 * discovery, /apis/<group>) lists the extension groups from `externalGroups`.
 *
 * Contract: `handle` answers only requests of a service-backed APIService's group/version and
 * returns false for everything else (the REST layer serves it); a group/version whose
 * APIService is not Available is 503, as in Kubernetes.
 */
import type { Logger } from 'pino';
import { apiservices } from '../../../api/resources/apiregistration/apiservices.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { compareVersions } from '../../../api/meta/version-priority.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { storeMirror, type StoreMirror } from '../../../storage/store-mirror.js';
import type { ApiRequest, ApiResponse, RequestContext } from '../context.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import type { ExternalGroup, GroupInfo } from '../rest/discovery.js';
import { writeError, toApiError } from '../rest/http-io.js';
import { availableCondition, checkApiService, writeAvailable, type CheckDeps } from './availability.js';
import { BackendAgents, BackendError, DEFAULT_IDENTITY_HEADERS, resolveBackend, serviceRefOf, serviceUnavailable, type IdentityHeaderNames } from './backend.js';
import { reconcileLocalApiServices } from './local-apiservices.js';
import { OpenApiCopies } from './openapi-fetch.js';
import { proxyToBackend, proxyUpgradeToBackend } from './proxy.js';
import { writeStatusToSocket } from '../filters/write-status.js';
import type { Duplex } from 'node:stream';

export interface AggregatorOptions {
  registry: ResourceRegistry;
  store: ObjectStore;
  log: Logger;
  /** The group/versions this server serves itself (discovery's groups), for the local APIServices. */
  served: () => readonly GroupInfo[];
  /** --proxy-client-cert-file / --proxy-client-key-file. */
  proxyClientCert?: { readonly cert: Buffer; readonly key: Buffer };
  /** Header names of the caller's identity (default X-Remote-User, X-Remote-Group, X-Remote-Extra-). */
  identityHeaders?: IdentityHeaderNames;
  /** --enable-aggregator-routing: endpoints' addresses instead of the ClusterIP. */
  routeToEndpoints: boolean;
  /** How often every APIService is checked (default 30 s, Kubernetes' resync). */
  checkIntervalMs?: number;
}

type Obj = Record<string, unknown>;

export class Aggregator {
  private readonly mirror: StoreMirror;
  private readonly agents: BackendAgents;
  private readonly names: IdentityHeaderNames;
  /** Service-backed APIServices by "group/version", rebuilt per mirror generation. */
  private byGroupVersion = new Map<string, KubeObject>();
  private indexed = -1;
  /** The last discovery answer of each APIService's backend, by name. */
  private readonly resources = new Map<string, Obj[]>();
  /** The extension servers' OpenAPI documents, for the API server's /openapi. */
  readonly openapi = new OpenApiCopies();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly o: AggregatorOptions) {
    this.mirror = storeMirror(o.store, apiservices.group, apiservices.plural, o.log);
    this.agents = new BackendAgents(o.proxyClientCert);
    this.names = o.identityHeaders ?? DEFAULT_IDENTITY_HEADERS;
  }

  async start(): Promise<void> {
    await this.mirror.ready;
    await this.round();
    this.mirror.onChange(() => this.kick());
    this.timer = setInterval(() => this.kick(), this.o.checkIntervalMs ?? 30_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    this.agents.close();
  }

  /** Runs a round soon (one at a time; a kick during a round runs one more after it). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) { this.again = true; return; }
    this.running = this.round().catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'aggregator round failed')).finally(() => {
      this.running = undefined;
      if (this.again) { this.again = false; this.kick(); }
    });
  }

  /** One round: local APIServices reconciled, every APIService checked and its status written. */
  private async round(): Promise<void> {
    await reconcileLocalApiServices(this.o.registry, this.o.served(), this.mirror.objects, this.o.log);
    const deps: CheckDeps = { registry: this.o.registry, agents: this.agents, routeToEndpoints: this.o.routeToEndpoints, names: this.names };
    const all = [...this.mirror.objects.values()];
    await Promise.all(all.map(async (a) => {
      const name = a.metadata?.name ?? '';
      const r = await checkApiService(deps, a);
      if (r.resources) this.resources.set(name, r.resources);
      const spec = (a.spec ?? {}) as Obj;
      if (r.target) await this.openapi.refresh(name, String(spec.group ?? ''), String(spec.version ?? ''), this.agents.agentFor(a), r.target, this.names);
      else this.openapi.forget(name);
      await writeAvailable(this.o.registry, a, r.condition, this.o.log);
    }));
    for (const name of this.resources.keys()) {
      if (this.mirror.objects.has(name)) continue;
      this.resources.delete(name);
      this.agents.forget(name);
      this.openapi.forget(name);
    }
  }

  private index(): Map<string, KubeObject> {
    if (this.indexed !== this.mirror.generation) {
      const m = new Map<string, KubeObject>();
      for (const a of this.mirror.objects.values()) {
        if (!serviceRefOf(a)) continue;
        const spec = (a.spec ?? {}) as Obj;
        m.set(`${String(spec.group ?? '')}/${String(spec.version ?? '')}`, a);
      }
      this.byGroupVersion = m;
      this.indexed = this.mirror.generation;
    }
    return this.byGroupVersion;
  }

  /** The service-backed APIService of `path` (/apis/<group>/<version>...), if any. */
  private backendOf(path: string): KubeObject | undefined {
    const m = /^\/apis\/([^/]+)\/([^/]+)(?:\/|$)/.exec(path);
    if (!m) return undefined;
    return this.index().get(`${m[1]}/${m[2]}`);
  }

  /** Serves the request when it belongs to an extension server; false when it does not. */
  async handle(ctx: RequestContext, req: ApiRequest, res: ApiResponse): Promise<boolean> {
    const a = this.backendOf(ctx.info.path);
    if (!a) return false;
    try {
      if (availableCondition(a)?.status !== 'True') throw serviceUnavailable();
      const ref = serviceRefOf(a)!;
      let target;
      try {
        target = await resolveBackend(this.o.registry, ref, this.o.routeToEndpoints);
      } catch (e) {
        throw e instanceof BackendError ? serviceUnavailable(e.message) : e;
      }
      try {
        await proxyToBackend(ctx, req, res, this.agents.agentFor(a), target, this.names);
      } catch (e) {
        // The backend did not answer: check it now rather than at the next interval.
        this.kick();
        throw e;
      }
    } catch (e) {
      const err = toApiError(e);
      ctx.audit?.noteStatus(err.status);
      if (!res.headersSent) writeError(res, err); else if (!res.writableEnded) res.end();
    }
    return true;
  }

  /** Takes over an upgrade for an extension's group/version (owning the socket); false when not one. */
  handleUpgrade(ctx: RequestContext, req: ApiRequest, socket: Duplex, head: Buffer): boolean {
    const a = this.backendOf(ctx.info.path);
    if (!a) return false;
    void (async () => {
      if (availableCondition(a)?.status !== 'True') throw serviceUnavailable();
      let target;
      try {
        target = await resolveBackend(this.o.registry, serviceRefOf(a)!, this.o.routeToEndpoints);
      } catch (e) {
        throw e instanceof BackendError ? serviceUnavailable(e.message) : e;
      }
      const agent = this.agents.upgradeAgentFor(a, target.serverName);
      try {
        await proxyUpgradeToBackend(ctx, req, socket, head, agent, target, this.names);
      } finally {
        agent.destroy();
      }
    })().catch((e: unknown) => {
      if (!socket.destroyed) writeStatusToSocket(socket, toApiError(e));
    });
    return true;
  }

  /** The extension servers' groups for discovery: versions by priority, with their last discovery answers. */
  externalGroups(): ExternalGroup[] {
    const groups = new Map<string, { priority: number; versions: { version: string; priority: number; resources?: Obj[] }[] }>();
    for (const a of this.index().values()) {
      const spec = (a.spec ?? {}) as Obj;
      const group = String(spec.group ?? '');
      const g = groups.get(group) ?? { priority: 0, versions: [] };
      g.priority = Math.max(g.priority, Number(spec.groupPriorityMinimum ?? 0));
      const available = availableCondition(a)?.status === 'True';
      const resources = available ? this.resources.get(a.metadata?.name ?? '') : undefined;
      g.versions.push({ version: String(spec.version ?? ''), priority: Number(spec.versionPriority ?? 0), ...(resources ? { resources } : {}) });
      groups.set(group, g);
    }
    return [...groups.entries()]
      .sort(([an, a], [bn, b]) => b.priority - a.priority || (an < bn ? -1 : an > bn ? 1 : 0))
      .map(([name, g]) => ({
        name,
        versions: g.versions.sort((x, y) => y.priority - x.priority || compareVersions(x.version, y.version))
          .map((v) => (v.resources ? { version: v.version, resources: v.resources } : { version: v.version })),
      }));
  }
}
