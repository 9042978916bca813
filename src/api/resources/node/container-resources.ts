/**
 * A resource list checked as container limits are (core validation's
 * ValidateContainerResourceRequirements with limits only), which is how Kubernetes checks a
 * RuntimeClass's overhead.podFixed: names are cpu, memory, ephemeral-storage, hugepages-<size>
 * or extended resources (a domain-prefixed name); quantities are not negative; extended
 * resources are whole numbers; hugepages come in whole pages and only beside cpu or memory.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { isQuantity, parseQuantity } from '../../../util/quantity.js';
import { isObject, pushAll, qualifiedName } from '../common/validation.js';

/** Single-segment names Kubernetes calls standard resources (IsStandardResourceName). */
const STANDARD_RESOURCES = new Set([
  'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage',
  'limits.cpu', 'limits.memory', 'limits.ephemeral-storage', 'pods', 'services', 'replicationcontrollers',
  'resourcequotas', 'secrets', 'persistentvolumeclaims', 'configmaps', 'requests.storage',
  'services.nodeports', 'services.loadbalancers',
]);
const CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);
/** Standard resources counted in whole units (IsIntegerResourceName, with extended resources). */
const INTEGER_RESOURCES = new Set([
  'pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims',
  'services.nodeports', 'services.loadbalancers',
]);
const HUGEPAGES_PREFIX = 'hugepages-';
const QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const isHugePages = (name: string): boolean => name.startsWith(HUGEPAGES_PREFIX);
const isNative = (name: string): boolean => !name.includes('/') || name.includes('kubernetes.io/');
const isExtended = (name: string): boolean =>
  !isNative(name) && !name.startsWith('requests.') && qualifiedName(`requests.${name}`).length === 0;

function nameProblems(name: string, field: string, errs: FieldError[]): void {
  const qualified = qualifiedName(name);
  if (qualified.length) { pushAll(errs, field, name, qualified); return; }
  if (!name.includes('/')) {
    const standard = STANDARD_RESOURCES.has(name) || isHugePages(name) || name.startsWith(`requests.${HUGEPAGES_PREFIX}`);
    if (!standard) errs.push(fieldErrors.invalid(field, name, 'must be a standard resource type or fully qualified'));
    if (!CONTAINER_RESOURCES.has(name) && !isHugePages(name)) errs.push(fieldErrors.invalid(field, name, 'must be a standard resource for containers'));
  } else if (!isNative(name) && !isExtended(name)) {
    errs.push(fieldErrors.invalid(field, name, "doesn't follow extended resource name standard"));
  }
}

/** A hugepages value must be a whole number of pages of the size the name gives. */
function wholePages(name: string, amount: number): boolean {
  const size = name.slice(HUGEPAGES_PREFIX.length);
  if (!isQuantity(size)) return false;
  const page = parseQuantity(size);
  return page > 0 && Number.isInteger(page) && amount % page === 0;
}

/** Checks `list` as the limits of a container; Kubernetes reports them under `<field>.limits[<name>]`. */
export function validateContainerLimits(list: unknown, field: string, errs: FieldError[]): void {
  if (list === undefined || list === null) return;
  const limits = `${field}.limits`;
  if (!isObject(list)) { errs.push(fieldErrors.typeInvalid(limits, list, 'must be a map of quantities')); return; }
  let cpuOrMemory = false, hugePages = false;
  for (const [name, raw] of Object.entries(list)) {
    const f = `${limits}[${name}]`;
    nameProblems(name, f, errs);
    if (name === 'cpu' || name === 'memory') cpuOrMemory = true;
    const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : undefined;
    if (text === undefined || !isQuantity(text)) { errs.push(fieldErrors.invalid(f, raw ?? null, QUANTITY_SYNTAX)); continue; }
    const amount = parseQuantity(text);
    if (amount < 0) errs.push(fieldErrors.invalid(f, text, 'must be greater than or equal to 0'));
    if ((INTEGER_RESOURCES.has(name) || isExtended(name)) && !Number.isInteger(amount)) errs.push(fieldErrors.invalid(f, text, 'must be an integer'));
    if (isHugePages(name)) {
      hugePages = true;
      if (!wholePages(name, amount)) errs.push(fieldErrors.invalid(f, text, `${text} is not positive integer multiple of ${name}`));
    }
  }
  if (hugePages && !cpuOrMemory) errs.push(fieldErrors.forbidden(field, 'HugePages require cpu or memory'));
}
