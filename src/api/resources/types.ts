/**
 * A resource is declared once; the REST layer, discovery, OpenAPI, tables, field selectors,
 * the object store and the garbage collector read these declarations instead of
 * special-casing kinds. One file per resource under src/api/resources/<group>/<plural>.ts.
 */
import type { FieldError } from '../meta/status.js';

/** A JSON Schema object as OpenAPI documents write it. */
export type OpenApiSchema = { [key: string]: unknown };

/** A Kubernetes object as stored and served: plain JSON data. */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [field: string]: unknown;
};

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: unknown[];
  [field: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface TableColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  /** 0: always shown; 1: only with -o wide. */
  priority: number;
  /** The cell for one object. */
  cell(obj: KubeObject, now: Date): unknown;
}

export interface Subresources {
  /** `<plural>/status`: writes to it change only status; main writes keep status. */
  status?: boolean;
  /** `<plural>/scale` as autoscaling/v1 Scale, with JSON paths into the object. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /**
   * Subresources written like status (CSR `approval`): a write changes only what the
   * definition's prepareForStatusUpdate takes from it, which is told the subresource's name.
   */
  statusLike?: readonly string[];
  /** Other subresources served by special handlers (log, exec, binding, eviction, token ...). */
  extra?: readonly { name: string; verbs: readonly string[]; kind?: { group: string; version: string; kind: string } }[];
}

export interface ResourceDefinition {
  readonly group: string;               // '' for core
  /** Served versions, preferred first. */
  readonly versions: readonly string[];
  /** The version objects are stored in (and converted from/to). */
  readonly storageVersion: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly namespaced: boolean;
  /** Verbs served, in discovery's order. */
  readonly verbs: readonly string[];
  readonly subresources?: Subresources;
  /** Spec-like fields: a change to anything but metadata/status bumps metadata.generation. */
  readonly hasGeneration?: boolean;

  /** Fill defaults (after decode, before admission). */
  defaults?(obj: KubeObject): void;
  /** Validation on create; `old` is given on update. Paths like 'spec.containers[0].image'. */
  validate?(obj: KubeObject, old?: KubeObject): FieldError[];
  /** Normalize on create (e.g. clear status, set phase Pending). */
  prepareForCreate?(obj: KubeObject): void;
  /** Normalize on update (e.g. keep status on main-resource writes). */
  prepareForUpdate?(obj: KubeObject, old: KubeObject): void;
  /** Field selector values beyond metadata.name and metadata.namespace. */
  readonly fieldSelectors?: Readonly<Record<string, (obj: KubeObject) => string>>;
  /**
   * Selectable fields the watch cache indexes watchers by when their field selector pins one
   * (`=`, `==`): such a watch is only offered events whose object has (or had) its value, as
   * Kubernetes' trigger functions do for pods by spec.nodeName.
   */
  readonly watchTriggers?: readonly string[];
  /** Server-side table columns after NAME (NAME comes first automatically). */
  readonly tableColumns?: readonly TableColumn[];
  /** Stored objects expire after this many seconds (events: --event-ttl). */
  ttlSeconds?(): number | undefined;

  // ---- optional extensions added by the REST layer (all optional; absent = generic behaviour) ----
  /**
   * Converts an object between served versions (obj.apiVersion names its current version);
   * needed only when `versions` has more than one entry whose schemas differ, or when
   * `storage` is set: then toVersion 'storage' converts into the storage resource's form and
   * any served version converts back from it.
   */
  convert?(obj: KubeObject, toVersion: string): KubeObject;
  /** Objects live in another resource's storage (events.k8s.io/v1 events share core events). */
  readonly storage?: { readonly group: string; readonly resource: string; readonly version: string };
  /** tableColumns already contain the name column (events put NAME last, as kubectl shows). */
  readonly tableColumnsIncludeName?: boolean;
  /**
   * Status-subresource writes: normalize (default keeps everything of `old` except status).
   * `obj` is `old` with the request's status; `requested` is the object as the request sent it,
   * for status-like subresources that take more than status (pods' ephemeralcontainers).
   */
  prepareForStatusUpdate?(obj: KubeObject, old: KubeObject, subresource?: string, requested?: KubeObject): void;
  /**
   * Graceful deletion: seconds to wait (requested = DeleteOptions.gracePeriodSeconds); 0 or
   * undefined deletes immediately. Only pods use it.
   */
  gracePeriodSeconds?(obj: KubeObject, requested: number | undefined): number;
  /**
   * Served versions in which a delete that names no propagation policy orphans the dependents
   * (Kubernetes' DefaultGarbageCollectionPolicy, kept for old clients: batch/v1 jobs, v1
   * replication controllers, batch/v1beta1 cron jobs, the extensions/v1beta1 workloads).
   * Elsewhere such a delete leaves the dependents to background collection.
   */
  readonly orphanDependentsByDefaultIn?: readonly string[];
  /**
   * Refuses deleting the object of this name (throws an ApiError) whatever admission plugins
   * run, as Kubernetes' storage does for the built-in PriorityClasses.
   */
  guardDelete?(name: string): void;
  /** Validation of a status-subresource write. */
  validateStatus?(obj: KubeObject, old: KubeObject, subresource?: string): FieldError[];
  /**
   * Drops from a request object the fields the resource does not keep (custom resources prune
   * what their schema does not declare) and returns their paths, like 'spec.foo', for
   * fieldValidation's unknown-field report. Resources with a schema declaration are checked
   * against it instead.
   */
  unknownFields?(obj: KubeObject): string[];
  /**
   * Resources without a schema declaration (custom resources) describe themselves to the
   * OpenAPI documents: the definition names of their kind and list schemas in a version
   * ('com.example.stable.v1.CronTab'), and those schemas by definition name. The schemas may
   * refer to meta/v1 ObjectMeta and ListMeta, which the documents then include.
   */
  readonly openApi?: {
    names(version: string): { kind: string; list: string };
    schemas(version: string, flavor: 'v2' | 'v3'): Record<string, OpenApiSchema>;
  };
}

/** Group/version/resource of a definition's preferred served version. */
export function gvkOf(def: ResourceDefinition, version = def.versions[0]!): { group: string; version: string; kind: string } {
  return { group: def.group, version, kind: def.kind };
}

export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}
