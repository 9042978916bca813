/**
 * Container environment as Kubernetes builds it: envFrom sources first (with their prefix),
 * then env entries in order, each value able to refer to earlier ones with $(VAR); $$ escapes.
 * Values come from literals, the pod's fields (fieldRef), the container's resources
 * (resourceFieldRef), config maps and secrets. Command and args get the same $(VAR) expansion.
 */
import { parseQuantity } from '../../util/quantity.js';
import type { Container, Pod } from './pod-types.js';

export interface ObjectReader {
  configMap(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  secret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

export class EnvError extends Error {
  override readonly name = 'EnvError';
}

export interface PodFieldContext {
  readonly podIp: string;
  readonly hostIp: string;
}

/** Expands $(NAME) references against `vars`; unknown references stay as written. */
export function expandVars(input: string, vars: ReadonlyMap<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch === '$' && input[i + 1] === '$') { out += '$'; i++; continue; }
    if (ch === '$' && input[i + 1] === '(') {
      const end = input.indexOf(')', i + 2);
      if (end > 0) {
        const name = input.slice(i + 2, end);
        const v = vars.get(name);
        out += v ?? `$(${name})`;
        i = end;
        continue;
      }
    }
    out += ch;
  }
  return out;
}

function formatMap(m: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(m ?? {}).sort().map((k) => `${k}="${(m ?? {})[k]}"`).join('\n');
}

/** The value of a downward-API field path (env or downwardAPI volume). */
export function podFieldValue(pod: Pod, path: string, ctx: PodFieldContext): string {
  const meta = pod.metadata ?? {};
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (m[1] === 'labels' ? meta.labels : meta.annotations)?.[m[2] ?? ''] ?? '';
  switch (path) {
    case 'metadata.name': return meta.name ?? '';
    case 'metadata.namespace': return meta.namespace ?? '';
    case 'metadata.uid': return meta.uid ?? '';
    case 'metadata.labels': return formatMap(meta.labels);
    case 'metadata.annotations': return formatMap(meta.annotations);
    case 'spec.nodeName': return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName': return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP': return ctx.podIp;
    case 'status.podIPs': return ctx.podIp;
    case 'status.hostIP': return ctx.hostIp;
    case 'status.hostIPs': return ctx.hostIp;
    default: throw new EnvError(`unsupported fieldRef ${path}`);
  }
}

/** A resourceFieldRef value: limits fall back to node allocatable, requests to 0; divided and rounded up. */
export function resourceFieldValue(c: Container | undefined, resource: string, divisor: string | number | undefined, allocatable: Readonly<Record<string, string>>): string {
  const [kind, name] = resource.split('.') as [string, string];
  const raw = kind === 'limits' ? (c?.resources?.limits?.[name] ?? allocatable[name]) : c?.resources?.requests?.[name];
  const value = raw === undefined ? 0 : parseQuantity(String(raw));
  const div = divisor === undefined || divisor === '' ? 1 : parseQuantity(String(divisor));
  return String(Math.ceil(value / (div || 1)));
}

/**
 * The container's environment. `serviceEnv` (service-env.ts) comes last, as in Kubernetes:
 * $(VAR) in env values may refer to it, and a variable the container sets itself wins.
 */
export async function containerEnv(pod: Pod, c: Container, ctx: PodFieldContext & { reader: ObjectReader; allocatable: Readonly<Record<string, string>>; serviceEnv?: ReadonlyMap<string, string> }): Promise<Map<string, string>> {
  const ns = pod.metadata?.namespace ?? 'default';
  const vars = new Map<string, string>();
  const serviceEnv = ctx.serviceEnv ?? new Map<string, string>();
  const lookup = { get: (k: string) => vars.get(k) ?? serviceEnv.get(k) } as ReadonlyMap<string, string>;
  for (const src of c.envFrom ?? []) {
    const prefix = src.prefix ?? '';
    let data: Record<string, string> | undefined;
    if (src.configMapRef) {
      data = await ctx.reader.configMap(ns, src.configMapRef.name);
      if (!data && !src.configMapRef.optional) throw new EnvError(`configmap "${src.configMapRef.name}" not found`);
    } else if (src.secretRef) {
      data = await ctx.reader.secret(ns, src.secretRef.name);
      if (!data && !src.secretRef.optional) throw new EnvError(`secret "${src.secretRef.name}" not found`);
    }
    for (const [k, v] of Object.entries(data ?? {})) vars.set(prefix + k, v);
  }
  for (const e of c.env ?? []) {
    const vf = e.valueFrom;
    if (!vf) { vars.set(e.name, expandVars(e.value ?? '', lookup)); continue; }
    if (vf.fieldRef) vars.set(e.name, podFieldValue(pod, vf.fieldRef.fieldPath, ctx));
    else if (vf.resourceFieldRef) {
      const target = vf.resourceFieldRef.containerName ? [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((x) => x.name === vf.resourceFieldRef?.containerName) : c;
      vars.set(e.name, resourceFieldValue(target, vf.resourceFieldRef.resource, vf.resourceFieldRef.divisor, ctx.allocatable));
    } else if (vf.configMapKeyRef) {
      const r = vf.configMapKeyRef;
      const v = (await ctx.reader.configMap(ns, r.name))?.[r.key];
      if (v === undefined) { if (!r.optional) throw new EnvError(`couldn't find key ${r.key} in ConfigMap ${ns}/${r.name}`); continue; }
      vars.set(e.name, v);
    } else if (vf.secretKeyRef) {
      const r = vf.secretKeyRef;
      const v = (await ctx.reader.secret(ns, r.name))?.[r.key];
      if (v === undefined) { if (!r.optional) throw new EnvError(`couldn't find key ${r.key} in Secret ${ns}/${r.name}`); continue; }
      vars.set(e.name, v);
    }
  }
  for (const [k, v] of serviceEnv) if (!vars.has(k)) vars.set(k, v);
  return vars;
}
