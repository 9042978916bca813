/**
 * storage.k8s.io/v1 CSIStorageCapacity: how much storage one storage class can provide in one
 * topology segment, published by a CSI driver's external-provisioner for the scheduler. The
 * inputs of the driver's GetCapacity call (nodeTopology and storageClassName) never change;
 * capacity may not be negative. Kubernetes checks maximumVolumeSize only as a quantity, and
 * kubectl's table has no AGE column for this kind.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { isQuantity, parseQuantity } from '../../../util/quantity.js';
import { defineResource } from '../common/define.js';
import { col, str } from '../common/table-util.js';
import { dns1123Subdomain, immutable, pushAll, validateLabelSelector } from '../common/validation.js';
import type { KubeObject } from '../types.js';

/** Kubernetes refuses a malformed quantity while decoding, with this wording. */
const QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/** The quantity's value, or undefined (after reporting it) when it is not one. */
function quantity(obj: KubeObject, field: string, errs: FieldError[]): number | undefined {
  const raw = obj[field];
  if (raw === undefined || raw === null) return undefined;
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : undefined;
  if (text === undefined || !isQuantity(text)) { errs.push(fieldErrors.invalid(field, raw, QUANTITY_SYNTAX)); return undefined; }
  return parseQuantity(text);
}

function validateSpec(obj: KubeObject, old?: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  validateLabelSelector(obj.nodeTopology, 'nodeTopology', errs);
  const className = str(obj.storageClassName);
  pushAll(errs, 'storageClassName', className, dns1123Subdomain(className));
  const capacity = quantity(obj, 'capacity', errs);
  if (capacity !== undefined && capacity < 0) errs.push(fieldErrors.invalid('capacity', obj.capacity, 'must be greater than or equal to 0'));
  quantity(obj, 'maximumVolumeSize', errs);
  if (old) {
    immutable(errs, 'nodeTopology', obj.nodeTopology, old.nodeTopology);
    immutable(errs, 'storageClassName', className, str(old.storageClassName));
  }
  return errs;
}

export const csistoragecapacities = defineResource({
  group: 'storage.k8s.io', versions: ['v1'], kind: 'CSIStorageCapacity', plural: 'csistoragecapacities', namespaced: true,
  validateSpec,
  noAge: true,
  columns: [
    col('StorageClassName', 'string', 'The storage class this capacity applies to.', (o) => str(o.storageClassName)),
    col('Capacity', 'string', 'The capacity reported by the driver\'s GetCapacity call for this topology and class.',
      (o) => (o.capacity === undefined || o.capacity === null ? '<unset>' : String(o.capacity))),
  ],
});
