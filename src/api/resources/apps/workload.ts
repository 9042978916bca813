/** Shared rules of apps/v1 workloads: required, immutable selector matching the template labels. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { rec, path } from '../common/table-util.js';
import { immutable, isObject, selectorMatches, validateLabelSelector } from '../common/validation.js';
import { validatePodTemplate } from '../core/pod-spec.js';
import type { KubeObject } from '../types.js';

export function validateWorkload(obj: KubeObject, old: KubeObject | undefined, opts: { restartPolicies?: string[]; replicas?: boolean; claimVolumes?: readonly string[] } = {}): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj.spec;
  if (!isObject(spec)) { errs.push(fieldErrors.required('spec')); return errs; }
  const sel = spec.selector;
  if (!isObject(sel)) errs.push(fieldErrors.required('spec.selector'));
  else {
    validateLabelSelector(sel, 'spec.selector', errs);
    const empty = !Object.keys(rec(sel.matchLabels)).length && !(Array.isArray(sel.matchExpressions) && sel.matchExpressions.length);
    if (empty) errs.push(fieldErrors.invalid('spec.selector', sel, 'empty selector is invalid for deployment'));
    else if (!selectorMatches(sel, rec(path(spec, 'template.metadata.labels')) as Record<string, string>)) {
      errs.push(fieldErrors.invalid('spec.template.metadata.labels', path(spec, 'template.metadata.labels') ?? {}, '`selector` does not match template `labels`'));
    }
  }
  if (opts.replicas !== false && spec.replicas !== undefined && (!Number.isInteger(spec.replicas) || (spec.replicas as number) < 0)) {
    errs.push(fieldErrors.invalid('spec.replicas', spec.replicas, 'must be greater than or equal to 0'));
  }
  validatePodTemplate(spec.template, 'spec.template', errs, opts.restartPolicies ?? ['Always'], opts.claimVolumes);
  if (old) immutable(errs, 'spec.selector', spec.selector, rec(old.spec).selector);
  return errs;
}

/** '25%' or an integer. */
export function validateIntOrPercent(v: unknown, f: string, errs: FieldError[]): void {
  if (v === undefined) return;
  if (typeof v === 'number') { if (!Number.isInteger(v) || v < 0) errs.push(fieldErrors.invalid(f, v, 'must be greater than or equal to 0')); return; }
  if (typeof v !== 'string' || !/^\d+%$/.test(v)) { errs.push(fieldErrors.invalid(f, v, 'a valid percent string must be a numeric string followed by an ending \'%\' (e.g. \'1%\',  or \'93%\', regex used for validation is \'[0-9]+%\')')); return; }
  if (parseInt(v, 10) > 100) errs.push(fieldErrors.invalid(f, v, 'must not be greater than 100%'));
}
