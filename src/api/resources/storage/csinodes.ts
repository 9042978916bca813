/**
 * storage.k8s.io/v1 CSINode: the CSI drivers the kubelet registered on a node (the object
 * shares the node's name). Kubernetes checks each driver's name with the CSI driver name rule,
 * its nodeID (up to 256 characters: the strategy always allows the longer limit), its topology
 * keys and allocatable count; a driver already listed may not change, though drivers may be
 * added or removed. The topology-key errors carry the driver's path, as Kubernetes reports
 * them.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { arr, col, path, rec, str } from '../common/table-util.js';
import { dns1123Subdomain, immutable, pushAll, qualifiedName } from '../common/validation.js';
import type { KubeObject } from '../types.js';

const DRIVER_NAME_MAX = 63;
const NODE_ID_MAX = 256;

/** Kubernetes' ValidateCSIDriverName: required, at most 63 characters, a subdomain once lowercased. */
function validateCsiDriverName(name: string, field: string, errs: FieldError[]): void {
  if (name === '') errs.push(fieldErrors.required(field));
  if (name.length > DRIVER_NAME_MAX) errs.push(fieldErrors.tooLong(field, DRIVER_NAME_MAX));
  pushAll(errs, field, name, dns1123Subdomain(name.toLowerCase()));
}

function validateDriver(raw: unknown, f: string, names: Set<string>, errs: FieldError[]): void {
  const d = rec(raw);
  const name = str(d.name);
  validateCsiDriverName(name, `${f}.name`, errs);
  const nodeID = str(d.nodeID);
  if (nodeID === '') errs.push(fieldErrors.required(`${f}.nodeID`));
  if (nodeID.length > NODE_ID_MAX) errs.push(fieldErrors.invalid(`${f}.nodeID`, nodeID, `must be ${NODE_ID_MAX} characters or less`));
  const count = path(d, 'allocatable.count');
  if (typeof count === 'number' && count < 0) errs.push(fieldErrors.invalid(`${f}.allocatable.count`, count, 'must be greater than or equal to 0'));
  if (names.has(name)) errs.push(fieldErrors.duplicate(`${f}.name`, name));
  names.add(name);
  const keys = new Set<string>();
  for (const key of arr(d.topologyKeys).map((k) => str(k))) {
    if (key === '') errs.push(fieldErrors.required(f));
    if (keys.has(key)) errs.push(fieldErrors.duplicate(f, key));
    keys.add(key);
    pushAll(errs, f, key, qualifiedName(key));
  }
}

/**
 * A driver as Kubernetes compares it on update: an empty key list equals an absent one
 * (semantic equality), so a client that drops `topologyKeys: []` changes nothing.
 */
function comparable(driver: unknown): Record<string, unknown> {
  const d = { ...rec(driver) };
  if (arr(d.topologyKeys).length === 0) delete d.topologyKeys;
  return d;
}

function validateSpec(obj: KubeObject, old?: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const drivers = arr(path(obj, 'spec.drivers'));
  const names = new Set<string>();
  drivers.forEach((d, i) => validateDriver(d, `spec.drivers[${i}]`, names, errs));
  if (old) {
    for (const was of arr(path(old, 'spec.drivers'))) {
      for (const now of drivers) {
        if (str(rec(now).name) === str(rec(was).name)) immutable(errs, 'spec.drivers', comparable(now), comparable(was));
      }
    }
  }
  return errs;
}

export const csinodes = defineResource({
  group: 'storage.k8s.io', versions: ['v1'], kind: 'CSINode', plural: 'csinodes', namespaced: false,
  validateSpec,
  columns: [
    col('Drivers', 'integer', 'Drivers indicates the number of CSI drivers registered on the node',
      (o) => arr(path(o, 'spec.drivers')).length),
  ],
});
