/**
 * The resource definition serving one CRD's custom resources: built from the CRD's accepted
 * names, served versions, storage version, schemas, subresources and printer columns, and
 * registered by the API server's CRD loop while the CRD is Established. Custom resources have
 * no protobuf form and no strategic merge patch (the REST layer falls back to JSON and answers
 * 415), as in Kubernetes.
 */
import { ApiError, type FieldError } from '../../meta/status.js';
import { compareVersions } from '../../meta/version-priority.js';
import { STD_VERBS, statusStrategy } from '../common/define.js';
import { ageColumn } from '../common/table-util.js';
import { dns1123Subdomain, validateObjectMeta, validateObjectMetaUpdate } from '../common/validation.js';
import { apiVersionOf, type KubeObject, type OpenApiSchema, type ResourceDefinition, type Subresources, type TableColumn } from '../types.js';
import { acceptedNames, crdGroup, crdNamespaced, crdSpec, crdVersions, type CrdVersion } from './crd-spec.js';
import { columnCell, defaultObject, openApiOf, pruneObject, validateObject } from './custom-resource-schema.js';

/** The scale paths of a CRD (".spec.replicas") in the registry's dotted form ("spec.replicas"). */
function dotted(p: string): string {
  return p.startsWith('.') ? p.slice(1) : p;
}

function subresourcesOf(versions: readonly CrdVersion[]): Subresources | undefined {
  // One set serves every version here; Kubernetes allows them per version (taken from the
  // storage version, which every CRD has).
  const v = versions.find((x) => x.storage) ?? versions[0];
  if (!v) return undefined;
  const out: { status?: boolean; scale?: Subresources['scale'] } = {};
  if (v.subresources.status) out.status = true;
  const sc = v.subresources.scale;
  if (sc) {
    out.scale = { specReplicasPath: dotted(sc.specReplicasPath), statusReplicasPath: dotted(sc.statusReplicasPath) };
    if (sc.labelSelectorPath) out.scale.labelSelectorPath = dotted(sc.labelSelectorPath);
  }
  return out.status || out.scale ? out : undefined;
}

function columnsOf(v: CrdVersion | undefined): TableColumn[] {
  if (!v || v.columns.length === 0) return [ageColumn];
  return v.columns.map((c) => ({
    name: c.name, type: c.type as TableColumn['type'], format: c.format ?? '', description: c.description ?? '',
    priority: c.priority ?? 0, cell: (o: KubeObject) => columnCell(o, c),
  }));
}

/** 'stable.example.com', 'v1', 'CronTab' → 'com.example.stable.v1.CronTab' (Kubernetes' definition names). */
export function customDefinitionName(group: string, version: string, kind: string): string {
  return [...group.split('.').reverse(), version, kind].join('.');
}

/** The kind and list schemas OpenAPI publishes for a custom resource version. */
function openApiSchemas(group: string, version: string, kind: string, listKind: string, schema: Record<string, unknown> | undefined, flavor: 'v2' | 'v3'): Record<string, OpenApiSchema> {
  const kindName = customDefinitionName(group, version, kind);
  const prefix = flavor === 'v3' ? '#/components/schemas/' : '#/definitions/';
  const listMeta = { $ref: `${prefix}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta` };
  const listSchema: OpenApiSchema = {
    description: `${listKind} is a list of ${kind}`, type: 'object', required: ['items'],
    properties: {
      apiVersion: { type: 'string', description: 'The versioned schema of this representation of an object.' },
      items: { type: 'array', description: `List of ${kind} objects.`, items: { $ref: prefix + kindName } },
      kind: { type: 'string', description: 'The REST resource this object represents.' },
      metadata: flavor === 'v3' ? { allOf: [listMeta], default: {} } : listMeta,
    },
    'x-kubernetes-group-version-kind': [{ group, kind: listKind, version }],
  };
  return { [kindName]: openApiOf(schema, flavor, { group, version, kind }), [customDefinitionName(group, version, listKind)]: listSchema };
}

/**
 * A definition for the CRD's custom resources, or undefined when it serves nothing (no
 * accepted names yet, or no served version).
 */
export function customResourceDefinition(crd: KubeObject): ResourceDefinition | undefined {
  const names = acceptedNames(crd);
  const versions = crdVersions(crd);
  const served = versions.filter((v) => v.served).map((v) => v.name).sort(compareVersions);
  const storage = versions.find((v) => v.storage);
  if (!names.plural || !names.kind || !served.length || !storage) return undefined;
  const group = crdGroup(crd);
  const namespaced = crdNamespaced(crd);
  const schemas = new Map(versions.map((v) => [v.name, v.schema]));
  const storageSchema = storage.schema;
  const subresources = subresourcesOf(versions);
  const webhookConversion = (crdSpec(crd).conversion as { strategy?: string } | undefined)?.strategy === 'Webhook';
  const statusSub = subresources?.status === true;
  const listKind = names.listKind || `${names.kind}List`;

  const def: ResourceDefinition = {
    group, versions: served, storageVersion: storage.name,
    kind: names.kind, listKind, plural: names.plural,
    singular: names.singular || names.kind.toLowerCase(), namespaced,
    verbs: STD_VERBS,
    hasGeneration: true,
    ...(names.shortNames.length ? { shortNames: names.shortNames } : {}),
    ...(names.categories.length ? { categories: names.categories } : {}),
    ...(subresources ? { subresources } : {}),
    tableColumns: columnsOf(storage),
    defaults(obj) {
      if (storageSchema) { pruneObject(obj, storageSchema); defaultObject(obj, storageSchema); }
    },
    validate(obj, old) {
      const errs: FieldError[] = validateObjectMeta(obj, namespaced, dns1123Subdomain);
      if (old) errs.push(...validateObjectMetaUpdate(obj, old));
      if (storageSchema) errs.push(...validateObject(obj, storageSchema, statusSub ? 'spec' : 'all'));
      return errs;
    },
    validateStatus(obj) {
      return storageSchema ? validateObject(obj, storageSchema, 'status') : [];
    },
    ...(statusSub ? statusStrategy : {}),
    convert(obj, toVersion) {
      const target = apiVersionOf(group, toVersion === 'storage' ? storage.name : toVersion);
      if (obj.apiVersion === target) return obj;
      if (webhookConversion) {
        throw new ApiError(500, 'InternalError', `conversion webhook for ${group}/${names.kind} is not supported by this server: cannot convert from ${String(obj.apiVersion)} to ${target}`, {});
      }
      const out = { ...obj, apiVersion: target };
      const schema = schemas.get(toVersion === 'storage' ? storage.name : toVersion);
      if (schema) defaultObject(out, schema);
      return out;
    },
    openApi: {
      names: (version) => ({ kind: customDefinitionName(group, version, names.kind), list: customDefinitionName(group, version, listKind) }),
      schemas: (version, flavor) => openApiSchemas(group, version, names.kind, listKind, schemas.get(version), flavor),
    },
    unknownFields(obj) {
      const v = typeof obj.apiVersion === 'string' ? obj.apiVersion.slice(obj.apiVersion.indexOf('/') + 1) : storage.name;
      const schema = schemas.get(v) ?? storageSchema;
      return schema ? pruneObject(obj, schema) : [];
    },
  };
  return def;
}
