/**
 * The OpenAPI schemas of CustomResourceDefinition and its list. apiextensions types have no
 * declaration in the schema registry (kubectl's descriptors, which it is generated from, do not
 * carry them), so the CRD resource describes itself: its fields with their types, and the
 * version schemas as open objects (a JSONSchemaProps tree).
 */
import type { OpenApiSchema } from '../types.js';

export const CRD_DEFINITION = 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition';
export const CRD_LIST_DEFINITION = `${CRD_DEFINITION}List`;

const str = (description: string): OpenApiSchema => ({ type: 'string', description });
const bool = (description: string): OpenApiSchema => ({ type: 'boolean', description });
const strings = (description: string): OpenApiSchema => ({ type: 'array', description, items: { type: 'string' } });
const obj = (description: string, properties: Record<string, OpenApiSchema>, required?: string[]): OpenApiSchema =>
  ({ type: 'object', description, properties, ...(required ? { required } : {}) });
const list = (description: string, items: OpenApiSchema, listType = 'atomic'): OpenApiSchema =>
  ({ type: 'array', description, items, 'x-kubernetes-list-type': listType });

const NAMES = obj('Names of the custom resource.', {
  plural: str('Plural name of the resource, used in its URL path; lowercase.'),
  singular: str('Singular name of the resource; lowercase. Defaults to the lowercased kind.'),
  shortNames: strings('Short names kubectl accepts for the resource.'),
  kind: str('Kind of the resource, in CamelCase.'),
  listKind: str('Kind of lists of the resource. Defaults to kind + "List".'),
  categories: strings('Groups of resources the resource belongs to, such as "all".'),
}, ['plural', 'kind']);

const COLUMN = obj('A column of the table kubectl get shows.', {
  name: str('Column heading.'),
  type: str('OpenAPI type of the column: integer, number, string, boolean or date.'),
  format: str('Optional OpenAPI format of the column.'),
  description: str('Human-readable description of the column.'),
  priority: { type: 'integer', format: 'int32', description: '0 shows the column by default; higher only with -o wide.' },
  jsonPath: str('Simple JSON path evaluated against each object for the column\'s value.'),
}, ['name', 'type', 'jsonPath']);

const VERSION = obj('One version of the custom resource.', {
  name: str('Version name, e.g. "v1" or "v2beta1"; served at /apis/<group>/<version>.'),
  served: bool('Whether the version is served.'),
  storage: bool('Whether objects are stored in this version; exactly one version has it.'),
  deprecated: bool('Whether the version is deprecated; clients get a warning.'),
  deprecationWarning: str('The warning clients get when the version is deprecated.'),
  schema: obj('Schema of the version.', {
    openAPIV3Schema: { type: 'object', description: 'The OpenAPI v3 schema objects of this version are validated, pruned and defaulted with.', 'x-kubernetes-preserve-unknown-fields': true },
  }),
  subresources: obj('Subresources the version serves.', {
    status: { type: 'object', description: 'Serves the status subresource when present.', 'x-kubernetes-preserve-unknown-fields': true },
    scale: obj('Serves the scale subresource when present.', {
      specReplicasPath: str('JSON path of the desired replicas, under .spec.'),
      statusReplicasPath: str('JSON path of the observed replicas, under .status.'),
      labelSelectorPath: str('JSON path of the label selector string, under .spec or .status.'),
    }, ['specReplicasPath', 'statusReplicasPath']),
  }),
  additionalPrinterColumns: list('Columns of the table kubectl get shows.', COLUMN),
  selectableFields: list('Fields that field selectors may use.', obj('A selectable field.', { jsonPath: str('JSON path of the field.') }, ['jsonPath'])),
}, ['name', 'served', 'storage']);

const CONDITION = obj('A condition of the definition.', {
  type: str('Type of the condition: Established, NamesAccepted, Terminating ...'),
  status: str('True, False or Unknown.'),
  lastTransitionTime: { type: 'string', format: 'date-time', description: 'When the condition last changed status.' },
  reason: str('Machine-readable reason of the last transition.'),
  message: str('Human-readable details of the last transition.'),
}, ['type', 'status']);

function kindSchema(metaRef: OpenApiSchema): OpenApiSchema {
  return {
    description: 'A CustomResourceDefinition adds a resource served by the API server.',
    type: 'object', required: ['spec'],
    properties: {
      apiVersion: str('The versioned schema of this representation of an object.'),
      kind: str('The REST resource this object represents.'),
      metadata: metaRef,
      spec: obj('What the custom resource is: its group, names, scope and versions.', {
        group: str('API group of the resource, a domain with at least one dot.'),
        names: NAMES,
        scope: str('Cluster or Namespaced.'),
        versions: list('Versions of the resource.', VERSION),
        conversion: obj('How objects convert between versions.', {
          strategy: str('None (only apiVersion changes) or Webhook.'),
          webhook: { type: 'object', description: 'The conversion webhook, for strategy Webhook.', 'x-kubernetes-preserve-unknown-fields': true },
        }, ['strategy']),
        preserveUnknownFields: bool('Deprecated: must be false; use x-kubernetes-preserve-unknown-fields in schemas.'),
      }, ['group', 'names', 'scope', 'versions']),
      status: obj('What the server made of the definition.', {
        conditions: list('Conditions of the definition.', CONDITION, 'map'),
        acceptedNames: NAMES,
        storedVersions: strings('Versions objects have ever been stored in.'),
      }),
    },
    'x-kubernetes-group-version-kind': [{ group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', version: 'v1' }],
  };
}

export function crdOpenApiSchemas(flavor: 'v2' | 'v3'): Record<string, OpenApiSchema> {
  const prefix = flavor === 'v3' ? '#/components/schemas/' : '#/definitions/';
  const ref = (type: string): OpenApiSchema => {
    const r = { $ref: `${prefix}io.k8s.apimachinery.pkg.apis.meta.v1.${type}` };
    return flavor === 'v3' ? { allOf: [r], default: {} } : r;
  };
  return {
    [CRD_DEFINITION]: kindSchema(ref('ObjectMeta')),
    [CRD_LIST_DEFINITION]: {
      description: 'A list of CustomResourceDefinition objects.', type: 'object', required: ['items'],
      properties: {
        apiVersion: str('The versioned schema of this representation of an object.'),
        items: { type: 'array', description: 'The definitions.', items: { $ref: prefix + CRD_DEFINITION } },
        kind: str('The REST resource this object represents.'),
        metadata: ref('ListMeta'),
      },
      'x-kubernetes-group-version-kind': [{ group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinitionList', version: 'v1' }],
    },
  };
}
