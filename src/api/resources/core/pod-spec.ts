/**
 * PodSpec defaults and validation, shared by pods and every pod template
 * (deployments, replicasets, replicationcontrollers, daemonsets, statefulsets, jobs, podtemplates).
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { validateTolerations } from '../common/tolerations.js';
import { dns1123Label, dns1123Subdomain, isObject, pushAll, validateAnnotations, validateLabels, configMapKey } from '../common/validation.js';

type Obj = Record<string, unknown>;

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];

/**
 * Whether containers may run privileged: the API server's --allow-privileged (default false).
 * Like Kubernetes' process-wide capabilities setting, it is set once when the API server starts
 * and holds for every pod spec the process validates (pods and every pod template).
 */
let allowPrivileged = false;
export function setAllowPrivileged(allow: boolean): void { allowPrivileged = allow; }

/** Always for ':latest' or untagged images, else IfNotPresent (digests count as tags). */
export function defaultPullPolicy(image: string): string {
  if (image.includes('@')) return 'IfNotPresent';
  const last = image.slice(image.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return last.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Obj): void {
  if (typeof c.image === 'string' && c.imagePullPolicy === undefined) c.imagePullPolicy = defaultPullPolicy(c.image);
  if (c.terminationMessagePath === undefined) c.terminationMessagePath = '/dev/termination-log';
  if (c.terminationMessagePolicy === undefined) c.terminationMessagePolicy = 'File';
  if (c.resources === undefined) c.resources = {};
  if (Array.isArray(c.ports)) for (const p of c.ports) if (isObject(p) && p.protocol === undefined) p.protocol = 'TCP';
  if (Array.isArray(c.env)) for (const e of c.env) {
    if (isObject(e) && isObject(e.valueFrom) && isObject(e.valueFrom.fieldRef) && e.valueFrom.fieldRef.apiVersion === undefined) e.valueFrom.fieldRef.apiVersion = 'v1';
  }
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const p = c[probe];
    if (!isObject(p)) continue;
    p.timeoutSeconds ??= 1; p.periodSeconds ??= 10; p.successThreshold ??= 1; p.failureThreshold ??= 3;
    if (isObject(p.httpGet)) { p.httpGet.path ??= '/'; p.httpGet.scheme ??= 'HTTP'; }
  }
}

/**
 * Pods only (not templates), as Kubernetes' pod defaulting: a container that limits a resource
 * without requesting it requests the limit.
 */
export function defaultRequestsFromLimits(spec: Obj): void {
  for (const list of ['initContainers', 'containers']) {
    const cs = spec[list];
    if (!Array.isArray(cs)) continue;
    for (const c of cs) {
      if (!isObject(c) || !isObject(c.resources) || !isObject(c.resources.limits)) continue;
      const limits = c.resources.limits;
      const requests = isObject(c.resources.requests) ? c.resources.requests : {};
      let added = false;
      for (const [k, v] of Object.entries(limits)) if (requests[k] === undefined) { requests[k] = v; added = true; }
      if (added) c.resources.requests = requests;
    }
  }
}

/** Fills the defaults Kubernetes users see on every pod spec. */
export function defaultPodSpec(spec: Obj): void {
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.securityContext ??= {};
  spec.schedulerName ??= 'default-scheduler';
  if (spec.serviceAccountName === undefined && typeof spec.serviceAccount === 'string') spec.serviceAccountName = spec.serviceAccount;
  if (typeof spec.serviceAccountName === 'string' && spec.serviceAccount === undefined) spec.serviceAccount = spec.serviceAccountName;
  spec.enableServiceLinks ??= true;
  if (spec.hostNetwork === true && Array.isArray(spec.containers)) {
    for (const c of spec.containers) if (isObject(c) && Array.isArray(c.ports)) for (const p of c.ports) if (isObject(p) && p.hostPort === undefined) p.hostPort = p.containerPort;
  }
  for (const list of ['initContainers', 'containers', 'ephemeralContainers']) {
    const cs = spec[list];
    if (Array.isArray(cs)) for (const c of cs) if (isObject(c)) defaultContainer(c);
  }
  if (Array.isArray(spec.volumes)) for (const v of spec.volumes) {
    if (!isObject(v)) continue;
    const hasSource = Object.keys(v).some((k) => k !== 'name');
    if (!hasSource) v.emptyDir = {};
    if (isObject(v.configMap)) v.configMap.defaultMode ??= 420;
    if (isObject(v.secret)) v.secret.defaultMode ??= 420;
    if (isObject(v.projected)) v.projected.defaultMode ??= 420;
    if (isObject(v.downwardAPI)) v.downwardAPI.defaultMode ??= 420;
    if (isObject(v.hostPath)) v.hostPath.type ??= '';
  }
}

/**
 * What Kubernetes' DefaultTolerationSeconds admission adds: tolerate not-ready/unreachable nodes
 * for 300 s unless the pod already tolerates those NoExecute taints itself.
 */
export function defaultTolerations(spec: Obj): void {
  const tols = Array.isArray(spec.tolerations) ? spec.tolerations as unknown[] : [];
  const tolerates = (key: string): boolean => tols.some((t) => isObject(t)
    && (t.key === key || ((t.key === undefined || t.key === '') && t.operator === 'Exists'))
    && (t.effect === undefined || t.effect === '' || t.effect === 'NoExecute'));
  const added: unknown[] = [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!tolerates(key)) added.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  }
  if (added.length) spec.tolerations = [...tols, ...added];
}

function validateContainer(c: unknown, f: string, errs: FieldError[], names: Set<string>, volumeNames: Set<string>, isInit: boolean): void {
  if (!isObject(c)) { errs.push(fieldErrors.typeInvalid(f, c, 'must be an object')); return; }
  if (typeof c.name !== 'string' || c.name === '') errs.push(fieldErrors.required(`${f}.name`));
  else {
    pushAll(errs, `${f}.name`, c.name, dns1123Label(c.name));
    if (names.has(c.name)) errs.push(fieldErrors.duplicate(`${f}.name`, c.name));
    names.add(c.name);
  }
  if (typeof c.image !== 'string' || c.image.trim() === '') errs.push(fieldErrors.required(`${f}.image`));
  if (c.imagePullPolicy !== undefined && !PULL_POLICIES.includes(String(c.imagePullPolicy))) errs.push(fieldErrors.notSupported(`${f}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES));
  if (c.terminationMessagePolicy !== undefined && !['File', 'FallbackToLogsOnError'].includes(String(c.terminationMessagePolicy))) {
    errs.push(fieldErrors.notSupported(`${f}.terminationMessagePolicy`, c.terminationMessagePolicy, ['File', 'FallbackToLogsOnError']));
  }
  for (const list of ['command', 'args']) {
    if (c[list] !== undefined && (!Array.isArray(c[list]) || (c[list] as unknown[]).some((x) => typeof x !== 'string'))) errs.push(fieldErrors.typeInvalid(`${f}.${list}`, c[list], 'must be a list of strings'));
  }
  if (c.ports !== undefined) {
    if (!Array.isArray(c.ports)) errs.push(fieldErrors.typeInvalid(`${f}.ports`, c.ports, 'must be a list'));
    else {
      const portNames = new Set<string>();
      const seen = new Set<string>();
      c.ports.forEach((p: unknown, i: number) => {
        const pf = `${f}.ports[${i}]`;
        if (!isObject(p)) { errs.push(fieldErrors.typeInvalid(pf, p, 'must be an object')); return; }
        if (p.containerPort === undefined) errs.push(fieldErrors.required(`${pf}.containerPort`));
        else if (!Number.isInteger(p.containerPort) || (p.containerPort as number) < 1 || (p.containerPort as number) > 65535) errs.push(fieldErrors.invalid(`${pf}.containerPort`, p.containerPort, 'must be between 1 and 65535, inclusive'));
        if (p.hostPort !== undefined && p.hostPort !== 0 && (!Number.isInteger(p.hostPort) || (p.hostPort as number) < 1 || (p.hostPort as number) > 65535)) errs.push(fieldErrors.invalid(`${pf}.hostPort`, p.hostPort, 'must be between 1 and 65535, inclusive'));
        if (p.protocol !== undefined && !PROTOCOLS.includes(String(p.protocol))) errs.push(fieldErrors.notSupported(`${pf}.protocol`, p.protocol, PROTOCOLS));
        if (typeof p.name === 'string' && p.name !== '') {
          if (p.name.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) || !/[a-z]/.test(p.name) || p.name.includes('--')) {
            errs.push(fieldErrors.invalid(`${pf}.name`, p.name, 'must be no more than 15 characters, contain only lowercase alphanumeric characters or \'-\', contain at least one letter (a-z), and not start or end with \'-\' or contain consecutive \'-\''));
          }
          if (portNames.has(p.name)) errs.push(fieldErrors.duplicate(`${pf}.name`, p.name));
          portNames.add(p.name);
        }
        const key = `${String(p.containerPort)}/${String(p.protocol ?? 'TCP')}/${String(p.hostIP ?? '')}/${String(p.hostPort ?? 0)}`;
        if (seen.has(key)) errs.push(fieldErrors.duplicate(`${pf}`, `${String(p.containerPort)}/${String(p.protocol ?? 'TCP')}`));
        seen.add(key);
      });
    }
  }
  if (c.env !== undefined) {
    if (!Array.isArray(c.env)) errs.push(fieldErrors.typeInvalid(`${f}.env`, c.env, 'must be a list'));
    else c.env.forEach((e: unknown, i: number) => {
      if (!isObject(e) || typeof e.name !== 'string' || e.name === '') errs.push(fieldErrors.required(`${f}.env[${i}].name`));
    });
  }
  if (Array.isArray(c.volumeMounts)) c.volumeMounts.forEach((m: unknown, i: number) => {
    const mf = `${f}.volumeMounts[${i}]`;
    if (!isObject(m)) return;
    if (typeof m.name !== 'string' || !m.name) errs.push(fieldErrors.required(`${mf}.name`));
    else if (!volumeNames.has(m.name)) errs.push({ field: `${mf}.name`, type: 'FieldValueNotFound', message: `Not found: ${JSON.stringify(m.name)}` });
    if (typeof m.mountPath !== 'string' || !m.mountPath) errs.push(fieldErrors.required(`${mf}.mountPath`));
  });
  if (isObject(c.securityContext) && c.securityContext.privileged === true && !allowPrivileged) {
    errs.push(fieldErrors.forbidden(`${f}.securityContext.privileged`, 'disallowed by cluster policy'));
  }
  if (isInit && c.lifecycle !== undefined && c.restartPolicy !== 'Always') errs.push(fieldErrors.forbidden(`${f}.lifecycle`, 'may not be set for init containers without restartPolicy=Always'));
}

/** What an ephemeral container may not set: Kubernetes leaves these out of its allow list. */
const EPHEMERAL_FORBIDDEN = ['ports', 'resources', 'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle', 'resizePolicy', 'restartPolicy'];
const EPHEMERAL_FORBIDDEN_MESSAGE = 'cannot be set for an Ephemeral Container';

/** Unset as Go sees a field: absent, null, or an empty list or struct. */
function unset(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0);
}

/** Defaults of the containers in spec.ephemeralContainers (those of any container). */
export function defaultEphemeralContainers(spec: Obj): void {
  if (Array.isArray(spec.ephemeralContainers)) for (const c of spec.ephemeralContainers) if (isObject(c)) defaultContainer(c);
}

/**
 * Validates a pod's spec.ephemeralContainers at `f` ('spec'), as Kubernetes: each is a valid
 * container whose name is unique among all the pod's containers, whose targetContainerName (if
 * any) names a container or init container, and which sets none of the fields debugging
 * containers may not have (ports, resources, probes, lifecycle, ...) nor a volume subPath.
 */
export function validateEphemeralContainers(spec: Obj, f: string, errs: FieldError[]): void {
  const list = spec.ephemeralContainers;
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) { errs.push(fieldErrors.typeInvalid(`${f}.ephemeralContainers`, list, 'must be a list')); return; }
  const volumeNames = new Set<string>();
  if (Array.isArray(spec.volumes)) for (const v of spec.volumes) if (isObject(v) && typeof v.name === 'string') volumeNames.add(v.name);
  const targets = new Set<string>();
  for (const l of ['containers', 'initContainers']) {
    const cs = spec[l];
    if (Array.isArray(cs)) for (const c of cs) if (isObject(c) && typeof c.name === 'string') targets.add(c.name);
  }
  const names = new Set(targets);
  list.forEach((c: unknown, i: number) => {
    const cf = `${f}.ephemeralContainers[${i}]`;
    validateContainer(c, cf, errs, names, volumeNames, false);
    if (!isObject(c)) return;
    if (typeof c.targetContainerName === 'string' && c.targetContainerName !== '' && !targets.has(c.targetContainerName)) {
      errs.push({ field: `${cf}.targetContainerName`, type: 'FieldValueNotFound', message: `Not found: ${JSON.stringify(c.targetContainerName)}` });
    }
    for (const k of EPHEMERAL_FORBIDDEN) if (!unset(c[k])) errs.push(fieldErrors.forbidden(`${cf}.${k}`, EPHEMERAL_FORBIDDEN_MESSAGE));
    if (Array.isArray(c.volumeMounts)) c.volumeMounts.forEach((m: unknown, j: number) => {
      if (!isObject(m)) return;
      for (const k of ['subPath', 'subPathExpr']) if (typeof m[k] === 'string' && m[k] !== '') errs.push(fieldErrors.forbidden(`${cf}.volumeMounts[${j}].${k}`, EPHEMERAL_FORBIDDEN_MESSAGE));
    });
  });
}

/**
 * Validates a pod spec at `f` ('spec' for pods, 'spec.template.spec' for templates).
 * `claimVolumes`: names the pods will also have as volumes (a StatefulSet's volumeClaimTemplates),
 * which volume mounts may name.
 */
export function validatePodSpec(spec: unknown, f: string, errs: FieldError[], allowedRestartPolicies = RESTART_POLICIES, claimVolumes: readonly string[] = []): void {
  if (!isObject(spec)) { errs.push(fieldErrors.required(f)); return; }
  const volumeNames = new Set<string>();
  if (spec.volumes !== undefined) {
    if (!Array.isArray(spec.volumes)) errs.push(fieldErrors.typeInvalid(`${f}.volumes`, spec.volumes, 'must be a list'));
    else spec.volumes.forEach((v: unknown, i: number) => {
      const vf = `${f}.volumes[${i}]`;
      if (!isObject(v) || typeof v.name !== 'string' || !v.name) { errs.push(fieldErrors.required(`${vf}.name`)); return; }
      pushAll(errs, `${vf}.name`, v.name, dns1123Label(v.name));
      if (volumeNames.has(v.name)) errs.push(fieldErrors.duplicate(`${vf}.name`, v.name));
      volumeNames.add(v.name);
      const sources = Object.keys(v).filter((k) => k !== 'name');
      if (sources.length > 1) errs.push(fieldErrors.forbidden(`${vf}.${sources[1]}`, 'may not specify more than 1 volume type'));
      if (isObject(v.configMap) && Array.isArray(v.configMap.items)) v.configMap.items.forEach((it: unknown, j: number) => {
        if (isObject(it) && typeof it.key === 'string') pushAll(errs, `${vf}.configMap.items[${j}].key`, it.key, configMapKey(it.key));
      });
    });
  }
  for (const v of claimVolumes) volumeNames.add(v);
  const names = new Set<string>();
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) errs.push(fieldErrors.required(`${f}.containers`));
  else spec.containers.forEach((c: unknown, i: number) => validateContainer(c, `${f}.containers[${i}]`, errs, names, volumeNames, false));
  if (spec.initContainers !== undefined) {
    if (!Array.isArray(spec.initContainers)) errs.push(fieldErrors.typeInvalid(`${f}.initContainers`, spec.initContainers, 'must be a list'));
    else spec.initContainers.forEach((c: unknown, i: number) => validateContainer(c, `${f}.initContainers[${i}]`, errs, names, volumeNames, true));
  }
  if (spec.restartPolicy !== undefined && !allowedRestartPolicies.includes(String(spec.restartPolicy))) errs.push(fieldErrors.notSupported(`${f}.restartPolicy`, spec.restartPolicy, allowedRestartPolicies));
  if (spec.dnsPolicy !== undefined && !DNS_POLICIES.includes(String(spec.dnsPolicy))) errs.push(fieldErrors.notSupported(`${f}.dnsPolicy`, spec.dnsPolicy, DNS_POLICIES));
  if (spec.terminationGracePeriodSeconds !== undefined && (!Number.isInteger(spec.terminationGracePeriodSeconds) || (spec.terminationGracePeriodSeconds as number) < 0)) {
    errs.push(fieldErrors.invalid(`${f}.terminationGracePeriodSeconds`, spec.terminationGracePeriodSeconds, 'must be greater than or equal to 0'));
  }
  if (spec.activeDeadlineSeconds !== undefined && (!Number.isInteger(spec.activeDeadlineSeconds) || (spec.activeDeadlineSeconds as number) < 1)) {
    errs.push(fieldErrors.invalid(`${f}.activeDeadlineSeconds`, spec.activeDeadlineSeconds, 'must be between 1 and 2147483647, inclusive'));
  }
  if (typeof spec.serviceAccountName === 'string' && spec.serviceAccountName !== '') pushAll(errs, `${f}.serviceAccountName`, spec.serviceAccountName, dns1123Subdomain(spec.serviceAccountName));
  if (typeof spec.nodeName === 'string' && spec.nodeName !== '') pushAll(errs, `${f}.nodeName`, spec.nodeName, dns1123Subdomain(spec.nodeName));
  if (typeof spec.hostname === 'string' && spec.hostname !== '') pushAll(errs, `${f}.hostname`, spec.hostname, dns1123Label(spec.hostname));
  if (spec.nodeSelector !== undefined) validateLabels(spec.nodeSelector, `${f}.nodeSelector`, errs);
  validateTolerations(spec.tolerations, `${f}.tolerations`, errs);
}

/** Validates a PodTemplateSpec at `f` ('spec.template'); `claimVolumes` as validatePodSpec's. */
export function validatePodTemplate(tpl: unknown, f: string, errs: FieldError[], allowedRestartPolicies?: string[], claimVolumes: readonly string[] = []): void {
  if (!isObject(tpl)) { errs.push(fieldErrors.required(f)); return; }
  const meta = isObject(tpl.metadata) ? tpl.metadata : {};
  validateLabels(meta.labels, `${f}.metadata.labels`, errs);
  validateAnnotations(meta.annotations, `${f}.metadata.annotations`, errs);
  validatePodSpec(tpl.spec, `${f}.spec`, errs, allowedRestartPolicies, claimVolumes);
  if (isObject(tpl.spec) && !unset(tpl.spec.ephemeralContainers)) errs.push(fieldErrors.forbidden(`${f}.spec.ephemeralContainers`, 'ephemeral containers not allowed in pod template'));
}

export function defaultPodTemplate(tpl: unknown): void {
  if (!isObject(tpl)) return;
  if (isObject(tpl.spec)) defaultPodSpec(tpl.spec);
  if (isObject(tpl.metadata)) tpl.metadata.creationTimestamp ??= null;
}
