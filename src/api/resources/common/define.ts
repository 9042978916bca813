/** Builders shared by resource definitions. */
import type { FieldError } from '../../meta/status.js';
import type { KubeObject, ResourceDefinition, TableColumn } from '../types.js';
import { dns1123Subdomain, validateObjectMeta, validateObjectMetaUpdate, type NameValidator } from './validation.js';
import { ageColumn } from './table-util.js';

export const STD_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;

type Writable<T> = { -readonly [K in keyof T]: T[K] };

export interface SimpleSpec extends Partial<Writable<ResourceDefinition>> {
  group: string;
  versions: readonly string[];
  kind: string;
  plural: string;
  namespaced: boolean;
  /** Name rule; default DNS-1123 subdomain. */
  nameValidator?: NameValidator;
  /** Resource-specific validation (metadata is validated by the builder). */
  validateSpec?(obj: KubeObject, old?: KubeObject): FieldError[];
  /** Columns after NAME; AGE is appended unless noAge. */
  columns?: TableColumn[];
  wideColumns?: TableColumn[];
  noAge?: boolean;
}

/**
 * Builds a definition from the common shape: metadata validation, update-time immutability
 * of name/namespace/uid, NAME ... AGE columns, standard verbs.
 */
export function defineResource(s: SimpleSpec): ResourceDefinition {
  const nameValidator = s.nameValidator ?? dns1123Subdomain;
  const cols: TableColumn[] = [...(s.columns ?? [])];
  if (!s.noAge) cols.push(ageColumn);
  cols.push(...(s.wideColumns ?? []));
  const validateSpec = s.validateSpec;
  const def: Writable<ResourceDefinition> = {
    storageVersion: s.versions[0]!,
    listKind: `${s.kind}List`,
    singular: s.kind.toLowerCase(),
    verbs: STD_VERBS,
    ...s,
    tableColumns: s.tableColumns ?? cols,
    validate(obj: KubeObject, old?: KubeObject): FieldError[] {
      const errs = validateObjectMeta(obj, s.namespaced, nameValidator);
      if (old) errs.push(...validateObjectMetaUpdate(obj, old));
      if (validateSpec) errs.push(...validateSpec(obj, old));
      return errs;
    },
  };
  for (const k of ['nameValidator', 'validateSpec', 'columns', 'wideColumns', 'noAge'] as const) delete (def as Record<string, unknown>)[k];
  return def;
}

/** prepareForCreate/Update for resources with a status subresource. */
export const statusStrategy = {
  prepareForCreate(obj: KubeObject): void { delete obj.status; },
  prepareForUpdate(obj: KubeObject, old: KubeObject): void {
    if (old.status === undefined) delete obj.status; else obj.status = old.status;
  },
};
