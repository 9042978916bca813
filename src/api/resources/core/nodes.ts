/** core/v1 Node (cluster-scoped; taints in spec.taints). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, str, arr, rec, path } from '../common/table-util.js';
import { isObject, pushAll, qualifiedName, labelValue } from '../common/validation.js';
import type { KubeObject } from '../types.js';
import { parseCidr } from '../../../util/ip.js';

const EFFECTS = ['NoExecute', 'NoSchedule', 'PreferNoSchedule'];

function nodeStatus(o: KubeObject): string {
  const conds = arr(path(o, 'status.conditions')).map(rec);
  const ready = conds.find((c) => c.type === 'Ready');
  const parts = [!ready ? 'Unknown' : ready.status === 'True' ? 'Ready' : 'NotReady'];
  if (path(o, 'spec.unschedulable') === true) parts.push('SchedulingDisabled');
  return parts.join(',');
}

function nodeRoles(o: KubeObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(o.metadata?.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) { const r = k.slice('node-role.kubernetes.io/'.length); if (r) roles.add(r); }
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return roles.size ? [...roles].sort().join(',') : '<none>';
}

function address(o: KubeObject, type: string): string {
  const a = arr(path(o, 'status.addresses')).map(rec).find((x) => x.type === type);
  return a ? str(a.address) : '<none>';
}

/** An IP family of a CIDR (4 or 6), or 0 when it is not a valid CIDR (Go's rules: util/ip.ts). */
function cidrFamily(v: unknown): 0 | 4 | 6 {
  const c = typeof v === 'string' ? parseCidr(v) : undefined;
  return !c ? 0 : c.ip.length === 4 ? 4 : 6;
}

/** spec.podCIDRs: valid CIDRs, at most one per IP family (so at most two), as Kubernetes. */
function validatePodCidrs(cidrs: unknown): FieldError[] {
  const errs: FieldError[] = [];
  const list = arr(cidrs);
  const families = list.map((c, i) => {
    const f = cidrFamily(c);
    if (!f) errs.push(fieldErrors.invalid(`spec.podCIDRs[${i}]`, c, 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'));
    return f;
  });
  if (list.length > 2) errs.push(fieldErrors.invalid('spec.podCIDRs', list, 'may specify no more than one CIDR for each IP family'));
  else if (list.length === 2 && families[0] && families[0] === families[1]) errs.push(fieldErrors.invalid('spec.podCIDRs', list, 'may specify no more than one CIDR for each IP family'));
  return errs;
}

export const nodes = defineResource({
  group: '', versions: ['v1'], kind: 'Node', plural: 'nodes', namespaced: false,
  shortNames: ['no'],
  subresources: {
    status: true,
    extra: [{ name: 'proxy', verbs: ['create', 'delete', 'get', 'patch', 'update'], kind: { group: '', version: 'v1', kind: 'NodeProxyOptions' } }],
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    const spec = isObject(obj.spec) ? obj.spec : {};
    const seen = new Set<string>();
    arr(spec.taints).forEach((t, i) => {
      const f = `spec.taints[${i}]`;
      if (!isObject(t)) { errs.push(fieldErrors.typeInvalid(f, t, 'must be an object')); return; }
      if (typeof t.key !== 'string' || !t.key) errs.push(fieldErrors.required(`${f}.key`));
      else pushAll(errs, `${f}.key`, t.key, qualifiedName(t.key));
      if (typeof t.value === 'string' && t.value) pushAll(errs, `${f}.value`, t.value, labelValue(t.value));
      if (!EFFECTS.includes(String(t.effect))) {
        if (t.effect === undefined || t.effect === '') errs.push(fieldErrors.required(`${f}.effect`));
        else errs.push(fieldErrors.notSupported(`${f}.effect`, t.effect, EFFECTS));
      }
      const key = `${String(t.key)}:${String(t.effect)}`;
      if (seen.has(key)) errs.push(fieldErrors.duplicate(f, `${String(t.key)}:${String(t.effect)}`));
      seen.add(key);
    });
    errs.push(...validatePodCidrs(spec.podCIDRs));
    const first = arr(spec.podCIDRs)[0];
    if (first !== undefined && spec.podCIDR !== first) errs.push(fieldErrors.invalid('spec.podCIDR', spec.podCIDR, 'must match the first entry of spec.podCIDRs'));
    if (old) {
      const oc = path(old, 'spec.podCIDR');
      if (oc && spec.podCIDR !== oc) errs.push(fieldErrors.forbidden('spec.podCIDR', 'node updates may not change podCIDR except from "" to valid'));
      // The controller manager's nodeipam may set the CIDRs once; after that they are fixed.
      const was = arr(path(old, 'spec.podCIDRs'));
      const now = arr(spec.podCIDRs);
      if (was.length && (was.length !== now.length || was.some((c, i) => c !== now[i]))) {
        errs.push(fieldErrors.forbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid'));
      }
    }
    return errs;
  },
  defaults(obj) {
    // podCIDR is podCIDRs[0]: a write giving one of them gets the other (validation refuses a
    // write giving both when they disagree, rather than dropping one silently).
    const spec = obj.spec;
    if (!isObject(spec)) return;
    const cidrs = arr(spec.podCIDRs);
    if (cidrs.length && !spec.podCIDR) spec.podCIDR = cidrs[0];
    else if (!cidrs.length && typeof spec.podCIDR === 'string' && spec.podCIDR) spec.podCIDRs = [spec.podCIDR];
  },
  prepareForCreate(obj) {
    // Node agents create their Node with status; Kubernetes keeps it on create.
    obj.status ??= {};
  },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  fieldSelectors: { 'spec.unschedulable': (o) => String(path(o, 'spec.unschedulable') === true) },
  columns: [
    col('Status', 'string', 'The status of the node', nodeStatus),
    col('Roles', 'string', 'The roles of the node', nodeRoles),
  ],
  wideColumns: [],
});
// AGE then VERSION, then the wide columns (the builder appends AGE after `columns`).
(nodes.tableColumns as unknown as unknown[]).push(
  col('Version', 'string', 'Kubelet Version reported by the node.', (o) => str(path(o, 'status.nodeInfo.kubeletVersion'))),
  col('Internal-IP', 'string', 'List of addresses reachable to the node. Queried from cloud provider, if available.', (o) => address(o, 'InternalIP'), 1),
  col('External-IP', 'string', 'List of addresses reachable to the node. Queried from cloud provider, if available.', (o) => address(o, 'ExternalIP'), 1),
  col('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', (o) => str(path(o, 'status.nodeInfo.osImage'), '<unknown>') || '<unknown>', 1),
  col('Kernel-Version', 'string', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", (o) => str(path(o, 'status.nodeInfo.kernelVersion'), '<unknown>') || '<unknown>', 1),
  col('Container-Runtime', 'string', 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', (o) => str(path(o, 'status.nodeInfo.containerRuntimeVersion'), '<unknown>') || '<unknown>', 1),
);
