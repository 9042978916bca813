/**
 * The OpenAPI v3 schema of a CustomResourceDefinition version (apiextensions.k8s.io/v1
 * JSONSchemaProps), as it appears in JSON. Every keyword is optional; the ones Kubernetes
 * refuses for CRDs (id, $schema, $ref, definitions, dependencies, patternProperties,
 * additionalItems, items as an array) are still declared so that validation can name them.
 */

/** Any JSON value (what `default`, `enum` and `example` hold). */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

export interface ExternalDocumentation {
  description?: string;
  url?: string;
}

/** One x-kubernetes-validations entry (a CEL rule). */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  /** FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired or FieldValueDuplicate. */
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

export type ListType = 'atomic' | 'set' | 'map';
export type MapType = 'atomic' | 'granular';

export interface JSONSchemaProps {
  id?: string;
  $schema?: string;
  $ref?: string;
  description?: string;
  type?: string;
  format?: string;
  title?: string;
  default?: JSONValue;
  maximum?: number;
  exclusiveMaximum?: boolean;
  minimum?: number;
  exclusiveMinimum?: boolean;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  maxItems?: number;
  minItems?: number;
  uniqueItems?: boolean;
  multipleOf?: number;
  enum?: JSONValue[];
  maxProperties?: number;
  minProperties?: number;
  required?: string[];
  /** A schema; the array form (tuple validation) is refused for CRDs. */
  items?: JSONSchemaProps | JSONSchemaProps[];
  allOf?: JSONSchemaProps[];
  oneOf?: JSONSchemaProps[];
  anyOf?: JSONSchemaProps[];
  not?: JSONSchemaProps;
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps | boolean;
  patternProperties?: Record<string, JSONSchemaProps>;
  dependencies?: Record<string, JSONSchemaProps | string[]>;
  additionalItems?: JSONSchemaProps | boolean;
  definitions?: Record<string, JSONSchemaProps>;
  externalDocs?: ExternalDocumentation;
  example?: JSONValue;
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-list-type'?: ListType | string;
  'x-kubernetes-map-type'?: MapType | string;
  'x-kubernetes-validations'?: ValidationRule[];
}
