/**
 * PodSecurity admission (the successor of PodSecurityPolicy), on by default as in Kubernetes.
 *
 * Namespaces choose a level per mode with labels pod-security.kubernetes.io/enforce|audit|warn
 * (and -version): enforce refuses violating pods (403, `pods "x" is forbidden: violates
 * PodSecurity "restricted:latest": ...`); warn adds a `Warning` header; audit is recorded as the
 * audit annotation `pod-security.kubernetes.io/audit-violations` (when the request collects
 * audit annotations) and an info log line. Workload
 * objects (Deployment, Job, CronJob ...) have their pod template checked for warn and audit only.
 * A namespace with labels that do not parse is refused (422); raising a namespace's enforce
 * level warns about its existing pods that would violate it. Defaults and exemptions
 * (usernames, namespaces, runtimeClasses) come from the PodSecurityConfiguration in
 * --admission-control-config-file.
 */
import { errors, fieldErrors } from '../../../../api/meta/status.js';
import type { KubeObject, ObjectMeta, ResourceDefinition } from '../../../../api/resources/types.js';
import { expectKind, isObject } from '../config-file.js';
import { readNamespace } from '../namespace-object.js';
import type { PodSpecShape } from '../pod-shape.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from '../types.js';
import { evaluate, levelVersionString, MODES, parseLevel, parseVersion, policyToEvaluate, type LevelVersion, type Policy } from './policy.js';

export interface PodSecurityConfig {
  readonly defaults: Policy;
  readonly exemptions: { readonly usernames: ReadonlySet<string>; readonly namespaces: ReadonlySet<string>; readonly runtimeClasses: ReadonlySet<string> };
}

const CONFIG_VERSIONS = ['pod-security.admission.config.k8s.io/v1', 'pod-security.admission.config.k8s.io/v1beta1', 'pod-security.admission.config.k8s.io/v1alpha1'];
const PRIVILEGED_LATEST: LevelVersion = { level: 'privileged', version: Infinity };

export function parsePodSecurityConfig(raw: unknown): PodSecurityConfig {
  const empty = { usernames: new Set<string>(), namespaces: new Set<string>(), runtimeClasses: new Set<string>() };
  if (raw === undefined) return { defaults: { enforce: PRIVILEGED_LATEST, audit: PRIVILEGED_LATEST, warn: PRIVILEGED_LATEST }, exemptions: empty };
  const doc = expectKind(raw, CONFIG_VERSIONS, 'PodSecurityConfiguration');
  const d = isObject(doc['defaults']) ? doc['defaults'] : {};
  const defaults = {} as Record<(typeof MODES)[number], LevelVersion>;
  for (const mode of MODES) {
    const levelText = String(d[mode] ?? 'privileged');
    const versionText = String(d[`${mode}-version`] ?? 'latest');
    const level = parseLevel(levelText);
    if (!level) throw new Error(`defaults.${mode}: Invalid value: ${JSON.stringify(levelText)}: must be one of privileged, baseline, restricted`);
    const version = parseVersion(versionText);
    if (version === undefined) throw new Error(`defaults.${mode}-version: Invalid value: ${JSON.stringify(versionText)}: must be "latest" or "v1.x"`);
    defaults[mode] = { level, version };
  }
  const ex = isObject(doc['exemptions']) ? doc['exemptions'] : {};
  const set = (k: string): Set<string> => {
    const v = ex[k] ?? [];
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string' || s === '')) throw new Error(`exemptions.${k}: must be a list of non-empty names`);
    return new Set(v as string[]);
  };
  return { defaults, exemptions: { usernames: set('usernames'), namespaces: set('namespaces'), runtimeClasses: set('runtimeClasses') } };
}

/** Where each workload kind keeps its pod template (Kubernetes' DefaultPodSpecExtractor). */
const TEMPLATE_PATHS: Readonly<Record<string, readonly string[]>> = {
  'apps/deployments': ['spec', 'template'],
  'apps/daemonsets': ['spec', 'template'],
  'apps/statefulsets': ['spec', 'template'],
  'apps/replicasets': ['spec', 'template'],
  '/replicationcontrollers': ['spec', 'template'],
  'batch/jobs': ['spec', 'template'],
  'batch/cronjobs': ['spec', 'jobTemplate', 'spec', 'template'],
  '/podtemplates': ['template'],
};

const keyOf = (def: ResourceDefinition): string => `${def.group}/${def.plural}`;
const isPods = (def: ResourceDefinition): boolean => def.group === '' && def.plural === 'pods';
const isNamespaces = (def: ResourceDefinition): boolean => def.group === '' && def.plural === 'namespaces';

function templateOf(def: ResourceDefinition, obj: KubeObject | undefined): { meta: ObjectMeta; spec: PodSpecShape } | undefined {
  let cur: unknown = obj;
  for (const k of TEMPLATE_PATHS[keyOf(def)] ?? []) cur = isObject(cur) ? cur[k] : undefined;
  if (!isObject(cur)) return undefined;
  return { meta: (cur['metadata'] ?? {}) as ObjectMeta, spec: (cur['spec'] ?? {}) as PodSpecShape };
}

/** Updates that change nothing Pod Security looks at (Kubernetes: images, seccomp annotations, containers added) are not evaluated. */
function isSignificantPodUpdate(pod: KubeObject, old: KubeObject): boolean {
  const ann = pod.metadata?.annotations ?? {};
  const oldAnn = old.metadata?.annotations ?? {};
  const seccompPod = 'seccomp.security.alpha.kubernetes.io/pod';
  if (ann[seccompPod] !== oldAnn[seccompPod]) return true;
  const spec = (pod.spec ?? {}) as PodSpecShape, oldSpec = (old.spec ?? {}) as PodSpecShape;
  const sig = (c: { name?: string; image?: string }, o: { name?: string; image?: string }): boolean => {
    const key = `container.seccomp.security.alpha.kubernetes.io/${c.name ?? ''}`;
    return c.image !== o.image || ann[key] !== oldAnn[key];
  };
  for (const list of ['containers', 'initContainers'] as const) {
    const a = spec[list] ?? [], b = oldSpec[list] ?? [];
    if (a.length !== b.length || a.some((c, i) => sig(c, b[i]!))) return true;
  }
  for (const c of spec.ephemeralContainers ?? []) {
    const o = (oldSpec.ephemeralContainers ?? []).find((x) => x.name === c.name);
    if (!o || sig(c, o)) return true;
  }
  return false;
}

export function podSecurity(ctx: AdmissionContext): AdmissionPlugin {
  const config = (ctx.pluginConfigs?.get('PodSecurity') as PodSecurityConfig | undefined) ?? parsePodSecurityConfig(undefined);
  const { exemptions } = config;
  const log = ctx.log;

  /** Exempt by namespace or user; recorded as Kubernetes' audit annotation pod-security.kubernetes.io/exempt. */
  const exempt = (a: AdmissionAttributes): boolean => {
    const by = a.namespace !== '' && exemptions.namespaces.has(a.namespace) ? 'namespace'
      : a.request?.user.name && exemptions.usernames.has(a.request.user.name) ? 'user' : undefined;
    if (by) annotate(a, 'exempt', by);
    return by !== undefined;
  };
  const annotate = (a: AdmissionAttributes, key: string, value: string): void => {
    if (a.request?.auditAnnotations) a.request.auditAnnotations[`pod-security.kubernetes.io/${key}`] = value;
  };

  /** Evaluates the pod(-template); throws when enforcing and it violates; warns and audits otherwise. */
  const evaluatePod = (a: AdmissionAttributes, policy: Policy, meta: ObjectMeta, spec: PodSpecShape, enforce: boolean): void => {
    if (spec.runtimeClassName && exemptions.runtimeClasses.has(spec.runtimeClassName)) { annotate(a, 'exempt', 'runtimeClass'); return; }
    const results = new Map<string, string | undefined>();
    const run = (lv: LevelVersion): string | undefined => {
      const k = levelVersionString(lv);
      if (!results.has(k)) results.set(k, evaluate(lv, meta, spec));
      return results.get(k);
    };
    let refusal: string | undefined;
    if (enforce) {
      annotate(a, 'enforce-policy', levelVersionString(policy.enforce));
      const v = run(policy.enforce);
      if (v) refusal = `violates PodSecurity ${JSON.stringify(levelVersionString(policy.enforce))}: ${v}`;
    }
    const audit = run(policy.audit);
    if (audit) {
      const violation = `would violate PodSecurity ${JSON.stringify(levelVersionString(policy.audit))}: ${audit}`;
      annotate(a, 'audit-violations', violation);
      log?.info({ 'pod-security.kubernetes.io/audit-violations': violation,
        resource: a.def.plural, namespace: a.namespace, name: a.object?.metadata?.name ?? a.name, user: a.request?.user.name }, 'PodSecurity audit violation');
    }
    if (refusal) throw errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.object?.metadata?.name ?? a.name }, refusal);
    const warn = run(policy.warn);
    if (warn) a.request?.warnings?.push(`would violate PodSecurity ${JSON.stringify(levelVersionString(policy.warn))}: ${warn}`);
  };

  const withPolicy = (a: AdmissionAttributes, f: (policy: Policy, labelErrors: boolean) => void): void | Promise<void> => {
    const apply = (ns: KubeObject | undefined): void => {
      if (!ns) throw errors.internal(`failed to lookup namespace ${a.namespace}`);
      const { policy, errors: errs } = policyToEvaluate(ns.metadata?.labels, config.defaults);
      f(policy, errs.length > 0);
    };
    const ns = readNamespace(ctx.store, a.namespace);
    return ns instanceof Promise ? ns.then(apply) : apply(ns);
  };

  const validatePod = (a: AdmissionAttributes): void | Promise<void> => {
    if (exempt(a) || !a.object) return;
    if (a.operation === 'UPDATE' && a.subresource === '' && a.oldObject && !isSignificantPodUpdate(a.object, a.oldObject)) return;
    return withPolicy(a, (policy, bad) => {
      if (!bad && policy.enforce.level === 'privileged' && policy.warn.level === 'privileged' && policy.audit.level === 'privileged') return;
      evaluatePod(a, policy, a.object!.metadata ?? {}, (a.object!.spec ?? {}) as PodSpecShape, true);
    });
  };

  const validateWorkload = (a: AdmissionAttributes): void | Promise<void> => {
    if (exempt(a)) return;
    const template = templateOf(a.def, a.object);
    if (!template) return;
    return withPolicy(a, (policy, bad) => {
      if (!bad && policy.warn.level === 'privileged' && policy.audit.level === 'privileged') return;
      evaluatePod(a, policy, template.meta, template.spec, false);
    });
  };

  const validateNamespace = async (a: AdmissionAttributes): Promise<void> => {
    const name = a.object?.metadata?.name ?? a.name;
    const { policy, errors: errs } = policyToEvaluate(a.object?.metadata?.labels, config.defaults);
    const old = a.oldObject ? policyToEvaluate(a.oldObject.metadata?.labels, config.defaults) : undefined;
    const text = (e: typeof errs): string => JSON.stringify(e);
    if (errs.length && (!old || text(errs) !== text(old.errors))) {
      throw errors.invalid('Namespace', '', name, errs.map((e) => fieldErrors.invalid(`metadata.labels[${e.label}]`, e.value, e.message)));
    }
    if (a.operation !== 'UPDATE' || !old) return;
    const now = policy.enforce, before = old.policy.enforce;
    if (levelVersionString(now) === levelVersionString(before) || now.level === 'privileged') return;
    const rank = { privileged: 0, baseline: 1, restricted: 2 } as const;
    if (now.version === before.version && rank[now.level] <= rank[before.level]) return;
    if (exemptions.namespaces.has(name)) return;
    a.request?.warnings?.push(...await existingPodWarnings(name, now));
  };

  /** Warnings naming the existing pods the new enforce level would refuse (Kubernetes' wording, grouped by violation). */
  const existingPodWarnings = async (namespace: string, lv: LevelVersion): Promise<string[]> => {
    const { items } = await ctx.store.list({ group: '', resource: 'pods', namespace });
    const byWarning = new Map<string, { first: string; count: number }>();
    for (const pod of items) {
      const spec = (pod.spec ?? {}) as PodSpecShape;
      if (spec.runtimeClassName && exemptions.runtimeClasses.has(spec.runtimeClassName)) continue;
      const v = evaluate(lv, pod.metadata ?? {}, spec);
      if (!v) continue;
      const name = pod.metadata?.name ?? '';
      const seen = byWarning.get(v);
      if (!seen) byWarning.set(v, { first: name, count: 1 });
      else { seen.count++; if (name < seen.first) seen.first = name; }
    }
    if (!byWarning.size) return [];
    const decorated = [...byWarning].map(([w, c]) => c.count === 1 ? `${c.first}: ${w}`
      : c.count === 2 ? `${c.first} (and 1 other pod): ${w}` : `${c.first} (and ${c.count - 1} other pods): ${w}`).sort();
    return [`existing pods in namespace ${JSON.stringify(namespace)} violate the new PodSecurity enforce level ${JSON.stringify(levelVersionString(lv))}`, ...decorated];
  };

  return {
    name: 'PodSecurity',
    handles: (op, def, sub) => {
      if (op !== 'CREATE' && op !== 'UPDATE') return false;
      if (isPods(def)) return sub === '' || sub === 'ephemeralcontainers';
      if (isNamespaces(def)) return sub === '';
      return sub === '' && TEMPLATE_PATHS[keyOf(def)] !== undefined;
    },
    validate(a) {
      if (isPods(a.def)) return validatePod(a);
      if (isNamespaces(a.def)) return validateNamespace(a);
      return validateWorkload(a);
    },
  };
}
