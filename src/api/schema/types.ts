/**
 * The one declaration of every API type. A declaration feeds:
 *   - the protobuf codec (field numbers, wire types, presence),
 *   - JSON decoding with strict field validation (JSON names, types),
 *   - the OpenAPI v2/v3 documents (types, formats, required, enums, extensions),
 *   - strategic merge patch and server-side apply (merge keys, strategies, list types).
 * Nothing about a type is declared anywhere else.
 *
 * Names: a message is named by its fully qualified protobuf name, e.g.
 * 'k8s.io.api.core.v1.PodSpec' or 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta'.
 */

/** Scalar wire types (protobuf proto2 scalars as Kubernetes uses them). */
export type ScalarType = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'double' | 'float' | 'bytes';

/**
 * Types with their own JSON form (and a plain protobuf message underneath), handled by name
 * in every codec:
 *   Time        JSON RFC 3339 seconds ("2026-01-02T03:04:05Z"); pb {seconds=1 int64, nanos=2 int32}
 *   MicroTime   JSON RFC 3339 with 6 fraction digits; pb as Time
 *   Duration    JSON Go duration string ("1m0s"); pb {duration=1 int64 ns}
 *   Quantity    JSON string ("100m", "1Gi"); pb {string=1}
 *   IntOrString JSON number or string; pb {type=1 int64, intVal=2 int32, strVal=3 string}
 *   RawExtension JSON any embedded object; pb {raw=1 bytes} (JSON bytes, or an enveloped object)
 *   FieldsV1    JSON any object; pb {Raw=1 bytes} holding that object's JSON
 *   JSON        JSON any value (apiextensions JSON); pb {raw=1 bytes}
 */
export type SpecialType = 'Time' | 'MicroTime' | 'Duration' | 'Quantity' | 'IntOrString' | 'RawExtension' | 'FieldsV1' | 'JSON';

export const SPECIAL_MESSAGES: Readonly<Record<string, SpecialType>> = {
  'k8s.io.apimachinery.pkg.apis.meta.v1.Time': 'Time',
  'k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime': 'MicroTime',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Duration': 'Duration',
  'k8s.io.apimachinery.pkg.api.resource.Quantity': 'Quantity',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': 'IntOrString',
  'k8s.io.apimachinery.pkg.runtime.RawExtension': 'RawExtension',
  'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1': 'FieldsV1',
  'k8s.io.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON': 'JSON',
};

/** A field's value type: a scalar or a message (by fully qualified name). */
export type TypeRef = { scalar: ScalarType } | { message: string };

export interface FieldDecl {
  /** JSON name (also the protobuf field name in Kubernetes' generated.proto). */
  readonly name: string;
  /** Protobuf field number. */
  readonly number: number;
  readonly type: TypeRef;
  /** A list (protobuf `repeated`, never packed on write; packed accepted on read). */
  readonly repeated?: true;
  /** A map with string keys (protobuf map<string, V>; entries written sorted by key). */
  readonly map?: true;
  /**
   * Go pointer / optional field: written to protobuf only when set, and its absence is
   * meaningful (e.g. Deployment spec.replicas). Non-optional scalars and messages are always
   * written by Go, zero values included; decoders must accept both.
   */
  readonly optional?: true;
  /**
   * Go embedded struct (`json:",inline"`): its fields appear flattened in the parent's JSON
   * object, but it is a nested message field in protobuf (e.g. Volume.volumeSource).
   */
  readonly inline?: true;
  /**
   * Go's JSON writes this field even when it holds its zero value (a non-pointer scalar whose
   * json tag has no `omitempty`, e.g. ContainerStatus.ready, restartCount). Decoders that
   * produce JSON from protobuf keep such zero values, as Go does.
   */
  readonly emitEmpty?: true;
  /**
   * A list or map whose Go json tag has no `omitempty` (e.g. PodSpec.containers, Role.rules, a
   * list's items): Go's JSON writes it even when empty, so the encoder never leaves it out.
   */
  readonly keepEmpty?: true;
  /** Required in OpenAPI and validation. */
  readonly required?: true;
  /** Allowed values, where Kubernetes declares an enum. */
  readonly enum?: readonly string[];
  /** Strategic merge patch: 'merge' | 'replace' | 'retainKeys' | 'merge,retainKeys'. */
  readonly patchStrategy?: string;
  /** Strategic merge patch key for merged lists of objects (e.g. 'name', 'containerPort'). */
  readonly patchMergeKey?: string;
  /** x-kubernetes-list-type: server-side apply list semantics. */
  readonly listType?: 'atomic' | 'set' | 'map';
  /** x-kubernetes-list-map-keys for listType 'map'. */
  readonly listMapKeys?: readonly string[];
  /** x-kubernetes-map-type. */
  readonly mapType?: 'atomic' | 'granular';
  /** Short description in our own words (OpenAPI, kubectl explain). */
  readonly description?: string;
  /**
   * Hand-added fields only: Go declares this field right after the named one (JSON writes
   * fields in Go's order); without it an added field goes last, as most newer fields do.
   */
  readonly goAfter?: string;
}

export interface MessageDecl {
  /** Fully qualified protobuf name. */
  readonly name: string;
  readonly fields: readonly FieldDecl[];
  /** For top-level kinds: the group/version/kind(s) this message is served as. */
  readonly gvk?: readonly { group: string; version: string; kind: string }[];
  readonly description?: string;
  /** x-kubernetes-map-type / struct-type 'atomic' for the whole message, where declared. */
  readonly structType?: 'atomic' | 'granular';
}

/** A set of declarations, indexed by fully qualified name. */
export interface SchemaRegistry {
  message(name: string): MessageDecl | undefined;
  /** The message declared for a kind, e.g. ('apps','v1','Deployment'). */
  forKind(group: string, version: string, kind: string): MessageDecl | undefined;
  all(): Iterable<MessageDecl>;
}
