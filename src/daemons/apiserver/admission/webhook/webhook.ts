/**
 * One webhook of a MutatingWebhookConfiguration or ValidatingWebhookConfiguration
 * (admissionregistration.k8s.io/v1), compiled once per configuration change into what the
 * plugins ask on every write. The stored objects carry Kubernetes' v1 defaults (failurePolicy
 * Fail, matchPolicy Equivalent, empty selectors, timeoutSeconds 10, scope "*", service port 443,
 * reinvocationPolicy Never); the same defaults apply here when a field is missing anyway.
 */
import type { AdmissionOperation } from '../types.js';

export type { WebhookFlavor } from '../../../../api/resources/admissionregistration/webhook-spec.js';
import type { WebhookFlavor } from '../../../../api/resources/admissionregistration/webhook-spec.js';

/** Operations as bits, so a rule answers with one AND. */
export const OP_BIT: Readonly<Record<AdmissionOperation, number>> = { CREATE: 1, UPDATE: 2, DELETE: 4, CONNECT: 8 };
const ALL_OPS = 1 | 2 | 4 | 8;

export interface Rule {
  readonly ops: number;
  /** '*' or the listed groups ('' is core). */
  readonly groups: readonly string[];
  readonly versions: readonly string[];
  /** [resource, subresource] pairs from "resource" or "resource/subresource" ('*' wildcards). */
  readonly resources: readonly (readonly [string, string])[];
  readonly scope: '*' | 'Cluster' | 'Namespaced';
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly Readonly<Record<string, unknown>>[];
}

export interface ServiceReference {
  readonly namespace: string;
  readonly name: string;
  readonly path: string;
  readonly port: number;
}

export interface ClientConfig {
  readonly url?: string;
  readonly service?: ServiceReference;
  /** PEM decoded from caBundle; undefined: the system's roots. */
  readonly caPem?: string;
}

export interface Webhook {
  readonly flavor: WebhookFlavor;
  readonly name: string;
  readonly configName: string;
  /** Identifies the webhook across calls of one request (two configurations may reuse a name). */
  readonly uid: string;
  readonly rules: readonly Rule[];
  /** matchPolicy Equivalent: also called for the same objects requested through another version or group. */
  readonly equivalent: boolean;
  /** failurePolicy Ignore: a failed call is logged and skipped. */
  readonly failOpen: boolean;
  /** Undefined when empty (matches everything). */
  readonly namespaceSelector?: LabelSelector;
  readonly objectSelector?: LabelSelector;
  /** '' when unset. */
  readonly sideEffects: string;
  readonly timeoutSeconds: number;
  /** The first AdmissionReview version of admissionReviewVersions this server speaks. */
  readonly reviewVersion?: 'v1' | 'v1beta1';
  /** reinvocationPolicy IfNeeded (mutating only). */
  readonly reinvoke: boolean;
  readonly client: ClientConfig;
}

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Obj : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function compileRule(r: Obj): Rule {
  let ops = 0;
  for (const op of strings(r.operations)) ops |= op === '*' ? ALL_OPS : (OP_BIT[op as AdmissionOperation] ?? 0);
  const resources = strings(r.resources).map((res): readonly [string, string] => {
    const slash = res.indexOf('/');
    return slash < 0 ? [res, ''] : [res.slice(0, slash), res.slice(slash + 1)];
  });
  const scope = r.scope === 'Cluster' || r.scope === 'Namespaced' ? r.scope : '*';
  return { ops, groups: strings(r.apiGroups), versions: strings(r.apiVersions), resources, scope };
}

function compileSelector(v: unknown): LabelSelector | undefined {
  const s = rec(v);
  const ml = rec(s.matchLabels);
  const me = Array.isArray(s.matchExpressions) ? s.matchExpressions.map(rec) : [];
  if (Object.keys(ml).length === 0 && me.length === 0) return undefined;
  return { matchLabels: ml as Record<string, string>, matchExpressions: me };
}

function compileClient(v: unknown): ClientConfig {
  const c = rec(v);
  const out: { url?: string; service?: ServiceReference; caPem?: string } = {};
  if (typeof c.url === 'string') out.url = c.url;
  const svc = rec(c.service);
  if (typeof svc.name === 'string') {
    out.service = {
      namespace: String(svc.namespace ?? ''), name: svc.name,
      path: typeof svc.path === 'string' ? svc.path : '', port: typeof svc.port === 'number' ? svc.port : 443,
    };
  }
  if (typeof c.caBundle === 'string' && c.caBundle !== '') out.caPem = Buffer.from(c.caBundle, 'base64').toString('utf8');
  return out;
}

export function compileWebhook(h: Obj, configName: string, index: number, flavor: WebhookFlavor): Webhook {
  const versions = strings(h.admissionReviewVersions);
  const reviewVersion = versions.find((v): v is 'v1' | 'v1beta1' => v === 'v1' || v === 'v1beta1');
  return {
    flavor, configName, name: String(h.name ?? ''), uid: `${configName}/${index}`,
    rules: (Array.isArray(h.rules) ? h.rules : []).map((r) => compileRule(rec(r))),
    equivalent: h.matchPolicy !== 'Exact',
    failOpen: h.failurePolicy === 'Ignore',
    namespaceSelector: compileSelector(h.namespaceSelector),
    objectSelector: compileSelector(h.objectSelector),
    sideEffects: typeof h.sideEffects === 'string' ? h.sideEffects : '',
    timeoutSeconds: typeof h.timeoutSeconds === 'number' && h.timeoutSeconds > 0 ? h.timeoutSeconds : 10,
    ...(reviewVersion ? { reviewVersion } : {}),
    reinvoke: flavor === 'mutating' && h.reinvocationPolicy === 'IfNeeded',
    client: compileClient(h.clientConfig),
  };
}
