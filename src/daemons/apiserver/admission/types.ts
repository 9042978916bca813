/**
 * Admission plugins: what a write passes through between defaulting and storage.
 *
 * Contract (as Kubernetes' admission chain): mutating plugins (`admit`) run in the chain's order
 * on the defaulted object before the resource's own checks and validation; validating plugins
 * (`validate`) run in the same order on the final object right before it is stored. A plugin
 * rejects by throwing an ApiError (usually 403 Forbidden); nothing is written then. `handles`
 * is asked once per (operation, resource, subresource) and remembered, so it must depend on
 * nothing else. A plugin with side effects (NamespaceAutoProvision) does nothing on a dry run.
 * Either hook may return a promise; a plugin that can answer at once returns nothing, so a
 * write that no plugin needs to wait for never awaits.
 *
 * Subresource writes are admitted under the subresource's name with its own object: status
 * with the whole object, scale with the autoscaling/v1 Scale, binding and eviction (CREATE)
 * with the Binding and the Eviction. CONNECT requests (pods/exec, attach, portforward, proxy;
 * services/proxy, nodes/proxy) are admitted by the handler that serves them, through `connect`,
 * with the object they connect to and the request's connect options.
 */
import type { Logger } from 'pino';
import type { Authorizer } from '../../../auth/authorizer.js';
import type { UserInfo } from '../../../auth/user.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';

/**
 * CONNECT is only ever seen by admission webhooks, through the chain's `connect` (the write
 * path's admit and validate never carry it).
 */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionAttributes {
  readonly operation: AdmissionOperation;
  readonly def: ResourceDefinition;
  /** '' for the main resource, else e.g. 'status'. */
  readonly subresource: string;
  /** '' for cluster-scoped resources. */
  readonly namespace: string;
  readonly name: string;
  /** CREATE and UPDATE: the object being written (mutating plugins change it in place). */
  readonly object?: KubeObject;
  /** UPDATE and DELETE: the stored object. */
  readonly oldObject?: KubeObject;
  readonly dryRun: boolean;
  /** The client request behind the write; absent for the server's own writes. */
  readonly request?: AdmissionRequestInfo;
  /** DELETE: the DeleteOptions (admission webhooks are shown them). */
  readonly deleteOptions?: AdmissionDeleteOptions;
}

/** What the REST layer knows of a request that admission webhooks are told. */
export interface AdmissionRequestInfo {
  readonly user: UserInfo;
  /** The API version the request addressed (the object is in the definition's storage form). */
  readonly version: string;
  readonly fieldManager?: string;
  /** Collects warnings for the response's `Warning: 299` headers. */
  readonly warnings?: string[];
  /**
   * Collects the audit annotations plugins add (Kubernetes' keys, e.g.
   * pod-security.kubernetes.io/audit-violations); the audit log puts them on the request's event.
   */
  readonly auditAnnotations?: Record<string, string>;
}

export interface AdmissionDeleteOptions {
  readonly gracePeriodSeconds?: number;
  readonly propagationPolicy?: string;
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
}

export type AdmissionResult = void | Promise<void>;

/**
 * A CONNECT request (pods/exec, pods/attach ...): admitted by the REST handler that serves it,
 * before it reaches the node, with the object it connects to.
 */
export interface ConnectAttributes {
  readonly def: ResourceDefinition;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  /** The object connected to (the pod), as stored; absent for the proxies. */
  readonly object?: KubeObject;
  /**
   * The connect options the request carries, as Kubernetes admits them (PodExecOptions,
   * PodAttachOptions, PodPortForwardOptions, PodProxyOptions, ServiceProxyOptions,
   * NodeProxyOptions; v1): what admission webhooks are shown as the object.
   */
  readonly options?: KubeObject;
  readonly request?: AdmissionRequestInfo;
}

export interface AdmissionPlugin {
  readonly name: string;
  handles(operation: AdmissionOperation, def: ResourceDefinition, subresource: string): boolean;
  admit?(a: AdmissionAttributes): AdmissionResult;
  validate?(a: AdmissionAttributes): AdmissionResult;
  /** CONNECT requests this plugin checks (asked once per resource and subresource, remembered). */
  handlesConnect?(def: ResourceDefinition, subresource: string): boolean;
  connect?(a: ConnectAttributes): AdmissionResult;
}

/** What plugins may use: the object store (read through its watch cache) and, for plugins that create objects, a way to create one. */
export interface AdmissionContext {
  readonly store: ObjectStore;
  readonly log?: Logger;
  /** Whether a definition is served at a version (--runtime-config); every version when absent. */
  readonly served?: (def: ResourceDefinition, version: string) => boolean;
  /** --proxy-client-cert-file / --proxy-client-key-file (their contents): the certificate presented to admission webhooks. */
  readonly webhookClientCert?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** The server's authorization chain (OwnerReferencesPermissionEnforcement asks it about the requesting user). */
  readonly authorizer?: Authorizer;
  /** Creates a namespace (NamespaceAutoProvision); AlreadyExists counts as success. */
  readonly createNamespace?: (name: string) => Promise<void>;
  /**
   * Sets a ResourceQuota's status.used if it is still at the resourceVersion `quota` was read
   * at (ResourceQuota); 409 Conflict otherwise.
   */
  readonly chargeQuota?: (quota: KubeObject, used: Record<string, string>) => Promise<void>;
  /** Plugin configurations from --admission-control-config-file, parsed by each plugin's parser (see chain.ts). */
  readonly pluginConfigs?: ReadonlyMap<string, unknown>;
}

export const isPod = (def: ResourceDefinition): boolean => def.group === '' && def.plural === 'pods';
