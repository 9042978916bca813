/**
 * The service account controller: every active namespace has a ServiceAccount named `default`
 * (created with the namespace, re-created when deleted).
 *
 * Contract: keys are namespace names; a sync creates at most one object and treats
 * AlreadyExists (someone was faster) and a terminating namespace (403) as success.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const NAMESPACES: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const SERVICE_ACCOUNTS: ResourceRef = { group: '', version: 'v1', resource: 'serviceaccounts' };

export interface ServiceAccountControllerOptions {
  /** Names ensured in every namespace. @default ['default'] */
  names?: readonly string[];
}

function isActive(ns: KubeObject): boolean {
  return !ns.metadata?.deletionTimestamp && (ns.status as { phase?: string } | undefined)?.phase !== 'Terminating';
}

export class ServiceAccountController implements Controller {
  readonly name = 'serviceaccount';
  private queue!: WorkQueue;
  private namespaces!: SharedIndexInformer;
  private accounts!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private readonly names: readonly string[];

  constructor(opts: ServiceAccountControllerOptions = {}) { this.names = opts.names ?? ['default']; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.namespaces = ctx.informers.informerFor(NAMESPACES);
    this.accounts = ctx.informers.informerFor(SERVICE_ACCOUNTS);
    this.namespaces.addEventHandler({
      onAdd: (ns) => this.queue.add(keyOf(ns)),
      onUpdate: (_o, ns) => this.queue.add(keyOf(ns)),
    });
    this.accounts.addEventHandler({
      onDelete: (x) => {
        const sa = deletedObject(x);
        if (this.names.includes(sa.metadata?.name ?? '')) this.queue.add(sa.metadata?.namespace ?? '');
      },
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.namespaces.waitForSync(ctx.signal), this.accounts.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    // Kubernetes runs this controller with one worker: the work is tiny and rare.
    await this.queue.runWorkers(1, (key) => this.sync(key), ctx.signal);
  }

  async sync(namespace: string): Promise<void> {
    const ns = this.namespaces.indexer.getByKey(namespace);
    if (!ns || !isActive(ns)) return;
    for (const name of this.names) {
      if (this.accounts.indexer.get(namespace, name)) continue;
      try {
        await this.client.create({ ...SERVICE_ACCOUNTS, namespace }, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
        this.log.info({ namespace, serviceAccount: name }, 'created service account');
      } catch (e) {
        if (isApiError(e) && (e.code === 409 || e.code === 403 || e.code === 404)) continue;
        throw e;
      }
    }
  }
}

export function newServiceAccountController(opts: ServiceAccountControllerOptions = {}): Controller {
  return new ServiceAccountController(opts);
}
