/** What the REST layer needs from the server: the object store, its config subset, a logger. */
import type { Logger } from 'pino';
import type { Authorizer } from '../../../auth/authorizer.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';

export interface RestConfig {
  /** --service-cluster-ip-range (CIDR). */
  readonly serviceClusterIpRange: string;
  /** --service-node-port-range: first port and count. */
  readonly serviceNodePortRange: { readonly base: number; readonly size: number };
  /** --advertise-address: the IP published in the `kubernetes` endpoints. */
  readonly advertiseAddress: string;
  readonly securePort: number;
  /** --runtime-config. */
  readonly runtimeConfig: Readonly<Record<string, string>>;
  /** --storage-versions (group → version); unknown groups keep their default storage version. */
  readonly storageVersions?: Readonly<Record<string, string>>;
  /** --event-ttl in milliseconds. */
  readonly eventTtl: number;
  readonly apiserverCount: number;
  /** --core-service-node-port: non-zero makes the `kubernetes` service a NodePort service on it. */
  readonly coreServiceNodePort?: number;
  readonly endpointReconcilerType: 'master-count' | 'lease' | 'none' | string;
  readonly repairMalformedUpdates: boolean;
  /** Gate APIListChunking (default true): false ignores `limit` and `continue`, every list is whole. */
  readonly listChunking?: boolean;
  /** Gate APIResponseCompression (default false): bodies over 128 KiB go gzip-compressed to clients that accept it. */
  readonly responseCompression?: boolean;
  /** --enable-garbage-collector (default true): deletes record their propagation policy for the collector. */
  readonly enableGarbageCollector?: boolean;
  readonly deleteCollectionWorkers: number;
  /** --min-request-timeout in seconds. */
  readonly minRequestTimeout: number;
  /**
   * The admission plugins to run (names; the chain orders them). Default: NamespaceLifecycle
   * alone, for embedders that do not parse the options.
   */
  readonly admissionPlugins?: readonly string[];
  /** Parsed plugin configurations (--admission-control-config-file), by plugin name. */
  readonly admissionPluginConfigs?: ReadonlyMap<string, unknown>;
  /** Reconcile interval of the `kubernetes` service endpoints (ms, default 10 s). */
  readonly endpointReconcileIntervalMs?: number;
  /** How often the ClusterIP/NodePort bitmaps are repaired from the services (default 3 min). */
  readonly allocationRepairIntervalMs?: number;
  /** --proxy-client-cert-file and --proxy-client-key-file, read at start: the identity webhook calls present. */
  readonly proxyClientCert?: { readonly cert: Buffer; readonly key: Buffer };
}

export interface RestDeps {
  readonly store: ObjectStore;
  readonly config: RestConfig;
  readonly log?: Logger;
  /** The server's authorization chain, for checks in the write path that ask it (RBAC escalation, OwnerReferencesPermissionEnforcement); none: no such checks. */
  readonly authorizer?: Authorizer;
}

export const MAX_BODY_BYTES = 3 * 1024 * 1024;
