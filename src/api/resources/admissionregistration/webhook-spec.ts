/**
 * The `webhooks` list shared by admissionregistration.k8s.io/v1 MutatingWebhookConfiguration
 * and ValidatingWebhookConfiguration: Kubernetes' v1 defaults, its validation with its field
 * paths and messages, and the WEBHOOKS table column. The webhook admission plugins read these
 * objects as Kubernetes' v1 API defines them, so every field keeps its upstream name.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { arr, col, rec, str } from '../common/table-util.js';
import { dns1035Label, dns1123Subdomain, isObject, labelValue, validateLabelSelector } from '../common/validation.js';
import type { KubeObject, TableColumn } from '../types.js';
import { validateClientConfig } from '../common/webhook-client-config.js';

export type WebhookFlavor = 'mutating' | 'validating';

type Obj = Record<string, unknown>;

/** AdmissionReview versions this server (and the one before it) can send. */
const ACCEPTED_REVIEW_VERSIONS = ['v1', 'v1beta1'];
// Supported-value lists are sorted as Kubernetes prints them.
const FAILURE_POLICIES = ['Fail', 'Ignore'];
const MATCH_POLICIES = ['Equivalent', 'Exact'];
const REINVOCATION_POLICIES = ['IfNeeded', 'Never'];
const NO_SIDE_EFFECTS = ['None', 'NoneOnDryRun'];
/** What v1beta1 also allowed; an update may keep them while the stored object has them. */
const ALL_SIDE_EFFECTS = ['None', 'NoneOnDryRun', 'Some', 'Unknown'];
const OPERATIONS = ['*', 'CONNECT', 'CREATE', 'DELETE', 'UPDATE'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];

const isSet = (v: unknown): boolean => v !== undefined && v !== null;
const webhooksOf = (obj: KubeObject | undefined): Obj[] => arr(obj?.webhooks).filter(isObject);

/** Kubernetes' v1 defaulting of each webhook (SetDefaults_MutatingWebhook / _ValidatingWebhook). */
export function defaultWebhooks(obj: KubeObject, flavor: WebhookFlavor): void {
  for (const w of webhooksOf(obj)) {
    if (!isSet(w.failurePolicy)) w.failurePolicy = 'Fail';
    if (!isSet(w.matchPolicy)) w.matchPolicy = 'Equivalent';
    if (!isSet(w.namespaceSelector)) w.namespaceSelector = {};
    if (!isSet(w.objectSelector)) w.objectSelector = {};
    if (!isSet(w.timeoutSeconds)) w.timeoutSeconds = 10;
    if (flavor === 'mutating' && !isSet(w.reinvocationPolicy)) w.reinvocationPolicy = 'Never';
    for (const r of arr(w.rules)) if (isObject(r) && !isSet(r.scope)) r.scope = '*';
    const service = rec(w.clientConfig).service;
    if (isObject(service) && !isSet(service.port)) service.port = 443;
  }
}

/**
 * Rules Kubernetes enforces on create but only keeps enforcing on update while the stored
 * object already meets them, so objects written under older rules stay updatable.
 */
interface Strictness {
  noSideEffects: boolean;
  recognizedReviewVersion: boolean;
  uniqueNames: boolean;
  validSelectorValues: boolean;
}

function strictnessFor(old: KubeObject | undefined): Strictness {
  if (!old) return { noSideEffects: true, recognizedReviewVersion: true, uniqueNames: true, validSelectorValues: true };
  const hooks = webhooksOf(old);
  const names = hooks.map((w) => w.name);
  return {
    noSideEffects: hooks.every((w) => NO_SIDE_EFFECTS.includes(str(w.sideEffects))),
    recognizedReviewVersion: hooks.every((w) => {
      const versions = arr(w.admissionReviewVersions);
      return versions.length === 0 || versions.some((v) => ACCEPTED_REVIEW_VERSIONS.includes(str(v)));
    }),
    uniqueNames: new Set(names).size === names.length,
    validSelectorValues: hooks.every((w) => selectorValueErrors(w.namespaceSelector, '').length === 0 && selectorValueErrors(w.objectSelector, '').length === 0),
  };
}

/** Label values in matchExpressions that are not label values (whether an old object has any). */
function selectorValueErrors(sel: unknown, at: string): FieldError[] {
  const errs: FieldError[] = [];
  arr(rec(sel).matchExpressions).forEach((e, i) => {
    arr(rec(e).values).forEach((v, j) => {
      if (typeof v !== 'string') return;
      for (const p of labelValue(v)) errs.push(fieldErrors.invalid(`${at}.matchExpressions[${i}].values[${j}]`, v, p));
    });
  });
  return errs;
}

function validateSelector(sel: unknown, at: string, strict: Strictness, errs: FieldError[]): void {
  if (!isSet(sel)) return;
  validateLabelSelector(sel, at, errs, { allowInvalidValues: !strict.validSelectorValues });
}

const hasWildcard = (list: unknown[]): boolean => list.includes('*');

/** Resource names with Kubernetes' rules on mixing '*', '*\/*', 'x/*' and '*\/x'. */
function validateResources(resources: unknown[], at: string, errs: FieldError[]): void {
  if (resources.length === 0) errs.push(fieldErrors.required(at));
  const withWildcardSub = new Set<string>(), subWithWildcardRes = new Set<string>();
  let doubleWildcard = false, singleWildcard = false, plainResource = false;
  resources.forEach((raw, i) => {
    const entry = str(raw);
    if (entry === '') { errs.push(fieldErrors.required(`${at}[${i}]`)); return; }
    if (entry === '*/*') doubleWildcard = true;
    if (entry === '*') singleWildcard = true;
    const slash = entry.indexOf('/');
    if (slash < 0) {
      // As upstream: the last entry without a subresource decides.
      plainResource = entry !== '*';
      return;
    }
    const res = entry.slice(0, slash), sub = entry.slice(slash + 1);
    if (withWildcardSub.has(res)) errs.push(fieldErrors.invalid(`${at}[${i}]`, entry, `if '${res}/*' is present, must not specify ${entry}`));
    if (subWithWildcardRes.has(sub)) errs.push(fieldErrors.invalid(`${at}[${i}]`, entry, `if '*/${sub}' is present, must not specify ${entry}`));
    if (sub === '*') withWildcardSub.add(res);
    if (res === '*') subWithWildcardRes.add(sub);
  });
  if (resources.length > 1 && doubleWildcard) errs.push(fieldErrors.invalid(at, resources, "if '*/*' is present, must not specify other resources"));
  if (singleWildcard && plainResource) errs.push(fieldErrors.invalid(at, resources, "if '*' is present, must not specify other resources without subresources"));
}

function validateRule(rule: Obj, at: string, errs: FieldError[]): void {
  const operations = arr(rule.operations);
  if (operations.length === 0) errs.push(fieldErrors.required(`${at}.operations`));
  if (operations.length > 1 && hasWildcard(operations)) errs.push(fieldErrors.invalid(`${at}.operations`, operations, "if '*' is present, must not specify other operations"));
  operations.forEach((op, i) => {
    if (!OPERATIONS.includes(str(op))) errs.push(fieldErrors.notSupported(`${at}.operations[${i}]`, op, OPERATIONS));
  });
  const groups = arr(rule.apiGroups), versions = arr(rule.apiVersions);
  if (groups.length === 0) errs.push(fieldErrors.required(`${at}.apiGroups`));
  if (groups.length > 1 && hasWildcard(groups)) errs.push(fieldErrors.invalid(`${at}.apiGroups`, groups, "if '*' is present, must not specify other API groups"));
  // An empty group is the core group; an empty version means nothing.
  if (versions.length === 0) errs.push(fieldErrors.required(`${at}.apiVersions`));
  if (versions.length > 1 && hasWildcard(versions)) errs.push(fieldErrors.invalid(`${at}.apiVersions`, versions, "if '*' is present, must not specify other API versions"));
  versions.forEach((v, i) => { if (str(v) === '') errs.push(fieldErrors.required(`${at}.apiVersions[${i}]`)); });
  validateResources(arr(rule.resources), `${at}.resources`, errs);
  if (isSet(rule.scope) && !SCOPES.includes(str(rule.scope))) errs.push(fieldErrors.notSupported(`${at}.scope`, rule.scope, SCOPES));
}

function validateReviewVersions(versions: unknown[], at: string, strict: Strictness, errs: FieldError[]): void {
  if (versions.length === 0) { errs.push(fieldErrors.required(at, `must specify one of ${ACCEPTED_REVIEW_VERSIONS.join(', ')}`)); return; }
  const seen = new Set<string>();
  let accepted = false;
  versions.forEach((raw, i) => {
    const v = str(raw);
    if (seen.has(v)) { errs.push(fieldErrors.invalid(`${at}[${i}]`, v, 'duplicate version')); return; }
    seen.add(v);
    for (const p of dns1035Label(v)) errs.push(fieldErrors.invalid(`${at}[${i}]`, v, p));
    if (ACCEPTED_REVIEW_VERSIONS.includes(v)) accepted = true;
  });
  if (strict.recognizedReviewVersion && !accepted) errs.push(fieldErrors.invalid(at, versions, `must include at least one of ${ACCEPTED_REVIEW_VERSIONS.join(', ')}`));
}

/** A webhook name must be a domain of at least three segments (IsFullyQualifiedName). */
function validateName(name: string, at: string, errs: FieldError[]): void {
  if (name === '') { errs.push(fieldErrors.required(at)); return; }
  const problems = dns1123Subdomain(name);
  if (problems.length) errs.push(fieldErrors.invalid(at, name, problems.join(',')));
  else if (name.split('.').length < 3) errs.push(fieldErrors.invalid(at, name, 'should be a domain with at least three segments separated by dots'));
}

function validateWebhook(w: Obj, at: string, flavor: WebhookFlavor, strict: Strictness, errs: FieldError[]): void {
  validateName(str(w.name), `${at}.name`, errs);
  arr(w.rules).forEach((r, i) => validateRule(rec(r), `${at}.rules[${i}]`, errs));
  if (isSet(w.failurePolicy) && !FAILURE_POLICIES.includes(str(w.failurePolicy))) errs.push(fieldErrors.notSupported(`${at}.failurePolicy`, w.failurePolicy, FAILURE_POLICIES));
  if (isSet(w.matchPolicy) && !MATCH_POLICIES.includes(str(w.matchPolicy))) errs.push(fieldErrors.notSupported(`${at}.matchPolicy`, w.matchPolicy, MATCH_POLICIES));
  const sideEffects = strict.noSideEffects ? NO_SIDE_EFFECTS : ALL_SIDE_EFFECTS;
  if (!isSet(w.sideEffects)) errs.push(fieldErrors.required(`${at}.sideEffects`, `must specify one of ${sideEffects.join(', ')}`));
  else if (!sideEffects.includes(str(w.sideEffects))) errs.push(fieldErrors.notSupported(`${at}.sideEffects`, w.sideEffects, sideEffects));
  const timeout = w.timeoutSeconds;
  if (typeof timeout === 'number' && (timeout > 30 || timeout < 1)) errs.push(fieldErrors.invalid(`${at}.timeoutSeconds`, timeout, 'the timeout value must be between 1 and 30 seconds'));
  validateSelector(w.namespaceSelector, `${at}.namespaceSelector`, strict, errs);
  validateSelector(w.objectSelector, `${at}.objectSelector`, strict, errs);
  if (flavor === 'mutating' && isSet(w.reinvocationPolicy) && !REINVOCATION_POLICIES.includes(str(w.reinvocationPolicy))) {
    errs.push(fieldErrors.notSupported(`${at}.reinvocationPolicy`, w.reinvocationPolicy, REINVOCATION_POLICIES));
  }
  validateClientConfig(w.clientConfig, `${at}.clientConfig`, errs);
  // Kubernetes skips a webhook whose CEL conditions are false; without a CEL evaluator this
  // server would call it anyway, so it refuses the conditions instead of ignoring them.
  if (arr(w.matchConditions).length > 0) {
    errs.push(fieldErrors.forbidden(`${at}.matchConditions`, 'CEL match conditions are not supported by this server (it has no CEL evaluator); remove matchConditions'));
  }
}

/** Validates `webhooks` of a configuration (and, on update, against the stored one). */
export function validateWebhooks(obj: KubeObject, old: KubeObject | undefined, flavor: WebhookFlavor): FieldError[] {
  const errs: FieldError[] = [];
  const strict = strictnessFor(old);
  const names = new Set<string>();
  arr(obj.webhooks).forEach((raw, i) => {
    const at = `webhooks[${i}]`;
    const w = rec(raw);
    validateWebhook(w, at, flavor, strict, errs);
    validateReviewVersions(arr(w.admissionReviewVersions), `${at}.admissionReviewVersions`, strict, errs);
    const name = str(w.name);
    if (strict.uniqueNames && name) {
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${at}.name`, name));
      else names.add(name);
    }
  });
  return errs;
}

/** WEBHOOKS: how many webhooks the configuration registers (kubectl get). */
export const webhooksColumn: TableColumn = col('Webhooks', 'integer', 'Webhooks indicates the number of webhooks registered in this configuration',
  (o) => arr(o.webhooks).length);
