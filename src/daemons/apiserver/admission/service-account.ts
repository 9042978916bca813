/**
 * ServiceAccount admission (pods, on create), as Kubernetes 1.22 and later:
 * - a pod without `serviceAccountName` runs as `default`;
 * - the account must exist in the pod's namespace (403 otherwise). `default` is made by the
 *   service account controller right after the namespace, so a miss on it is looked up again a
 *   few times, 100–200 ms apart, before the pod is refused;
 * - unless the pod (first) or the account says `automountServiceAccountToken: false`, every
 *   init and regular container that mounts nothing at /var/run/secrets/kubernetes.io/serviceaccount
 *   gets the projected volume `kube-api-access-<5 random>` there, read-only: a bound token
 *   (expirationSeconds 3607), `ca.crt` from the `kube-root-ca.crt` ConfigMap and the namespace;
 * - a pod without imagePullSecrets gets the account's;
 * - an account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the pod's
 *   secret volumes, secret env references and pull secrets to the ones the account lists;
 * - mirror pods are left as they are, and may reference neither accounts nor secrets.
 *
 * Contract: the account is read from the watch cache (each stored version decoded once), so a
 * pod create in a namespace whose account is cached does not await anything here.
 */
import { errors } from '../../../api/meta/status.js';
import { ROOT_CA_CONFIG_MAP } from '../../../api/resources/core/configmaps.js';
import { MIRROR_POD_ANNOTATION } from '../../../api/resources/core/pods.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { KeyValue } from '../../../storage/interface.js';
import type { ObjectRef, ObjectStore, StoredEntry } from '../../../storage/object-store-types.js';
import { randomSuffix } from '../registry/object-meta.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';
import { isPod } from './types.js';

export const TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
export const TOKEN_VOLUME_PREFIX = 'kube-api-access-';
const ENFORCE_ANNOTATION = 'kubernetes.io/enforce-mountable-secrets';
/** Kubernetes asks for a bit over an hour, so tokens from this path are recognisable. */
const TOKEN_EXPIRATION_SECONDS = 3607;
const DEFAULT_LOOKUPS = 10;

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): Dict[] => (Array.isArray(v) ? v.filter(isDict) : []);

/** What admission uses of an account. */
interface AccountInfo {
  readonly automount: boolean | undefined;
  readonly imagePullSecrets: readonly Dict[];
  readonly enforceMountable: boolean;
  readonly secrets: ReadonlySet<string>;
  readonly pullSecrets: ReadonlySet<string>;
}

const infoByEntry = new WeakMap<KeyValue, AccountInfo>();

function infoOf(sa: KubeObject): AccountInfo {
  const o = sa as Dict;
  const names = (v: unknown): Set<string> => new Set(list(v).map((r) => String(r.name ?? '')));
  return {
    automount: typeof o.automountServiceAccountToken === 'boolean' ? o.automountServiceAccountToken : undefined,
    imagePullSecrets: list(o.imagePullSecrets).map((r) => ({ name: r.name })),
    enforceMountable: sa.metadata?.annotations?.[ENFORCE_ANNOTATION] === 'true',
    secrets: names(o.secrets),
    pullSecrets: names(o.imagePullSecrets),
  };
}

function entryInfo(entry: StoredEntry): AccountInfo | Promise<AccountInfo> {
  return infoByEntry.get(entry.kv) ?? entry.decode(entry.kv).then((sa) => {
    const info = infoOf(sa);
    infoByEntry.set(entry.kv, info);
    return info;
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function lookUp(store: ObjectStore, ref: ObjectRef, attempts: number): Promise<AccountInfo | undefined> {
  for (let i = 0; i < attempts; i++) {
    if (i > 0) await sleep(100 + Math.random() * 100);
    const entry = await store.getEntry(ref);
    if (entry) return entryInfo(entry);
  }
  return undefined;
}

/** The account's info: at once from the cache when it has the account, else read (and retried for `default`). */
function accountInfo(store: ObjectStore, namespace: string, name: string): AccountInfo | undefined | Promise<AccountInfo | undefined> {
  const ref: ObjectRef = { group: '', resource: 'serviceaccounts', namespace, name };
  const cached = store.peekEntry(ref);
  if (cached) return entryInfo(cached);
  return lookUp(store, ref, name === 'default' ? DEFAULT_LOOKUPS : 1);
}

function isMirror(pod: KubeObject): boolean {
  return pod.metadata?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined;
}

function forbidden(a: AdmissionAttributes, why: string): Error {
  return errors.admissionForbidden({ group: '', resource: 'pods', name: a.name }, why);
}

function tokenVolume(name: string): Dict {
  return {
    name,
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: TOKEN_EXPIRATION_SECONDS, path: 'token' } },
        { configMap: { name: ROOT_CA_CONFIG_MAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
      defaultMode: 420,
    },
  };
}

function mountToken(spec: Dict): void {
  const volumes = list(spec.volumes);
  const names = new Set(volumes.map((v) => String(v.name ?? '')));
  const existing = volumes.find((v) => String(v.name ?? '').startsWith(TOKEN_VOLUME_PREFIX));
  let name = existing ? String(existing.name) : '';
  while (!name || (!existing && names.has(name))) name = TOKEN_VOLUME_PREFIX + randomSuffix();
  let needed = false;
  for (const key of ['initContainers', 'containers']) {
    for (const c of list(spec[key])) {
      const mounts = list(c.volumeMounts);
      if (mounts.some((m) => m.mountPath === TOKEN_MOUNT_PATH)) continue;
      c.volumeMounts = [...mounts, { name, readOnly: true, mountPath: TOKEN_MOUNT_PATH }];
      needed = true;
    }
  }
  if (needed && !existing) spec.volumes = [...(Array.isArray(spec.volumes) ? spec.volumes : []), tokenVolume(name)];
}

function mutate(spec: Dict, info: AccountInfo): void {
  const automount = typeof spec.automountServiceAccountToken === 'boolean' ? spec.automountServiceAccountToken : info.automount ?? true;
  if (automount) mountToken(spec);
  if (list(spec.imagePullSecrets).length === 0 && info.imagePullSecrets.length) spec.imagePullSecrets = info.imagePullSecrets.map((r) => ({ ...r }));
}

/** The secrets a pod names: volumes (secret and projected secret sources), env and envFrom, pull secrets. */
function secretRefs(spec: Dict): Array<{ name: string; what: string }> {
  const out: Array<{ name: string; what: string }> = [];
  for (const v of list(spec.volumes)) {
    if (isDict(v.secret)) out.push({ name: String(v.secret.secretName ?? ''), what: `volume with secret.secretName="${String(v.secret.secretName ?? '')}"` });
    if (isDict(v.projected)) {
      for (const s of list(v.projected.sources)) if (isDict(s.secret)) out.push({ name: String(s.secret.name ?? ''), what: `projected volume with secret "${String(s.secret.name ?? '')}"` });
    }
  }
  for (const key of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of list(spec[key])) {
      for (const e of list(c.env)) {
        const ref = isDict(e.valueFrom) && isDict(e.valueFrom.secretKeyRef) ? e.valueFrom.secretKeyRef : undefined;
        if (ref) out.push({ name: String(ref.name ?? ''), what: `container ${String(c.name)} with envVar ${String(e.name)} referencing secret.secretName="${String(ref.name ?? '')}"` });
      }
      for (const e of list(c.envFrom)) {
        if (isDict(e.secretRef)) out.push({ name: String(e.secretRef.name ?? ''), what: `container ${String(c.name)} with envFrom referencing secret.secretName="${String(e.secretRef.name ?? '')}"` });
      }
    }
  }
  return out;
}

function checkMountable(a: AdmissionAttributes, spec: Dict, account: string, info: AccountInfo): void {
  for (const r of secretRefs(spec)) {
    if (!info.secrets.has(r.name)) throw forbidden(a, `${r.what} is not allowed because service account ${account} does not reference that secret`);
  }
  list(spec.imagePullSecrets).forEach((r, i) => {
    const name = String(r.name ?? '');
    if (!info.pullSecrets.has(name)) throw forbidden(a, `imagePullSecrets[${i}].name="${name}" is not allowed because service account ${account} does not reference that imagePullSecret`);
  });
}

export function serviceAccount(ctx: AdmissionContext): AdmissionPlugin {
  const withAccount = (a: AdmissionAttributes, use: (spec: Dict, account: string, info: AccountInfo) => void): void | Promise<void> => {
    const pod = a.object!;
    if (!isDict(pod.spec)) return;
    const spec = pod.spec;
    if (typeof spec.serviceAccountName !== 'string' || spec.serviceAccountName === '') spec.serviceAccountName = 'default';
    const account = spec.serviceAccountName as string;
    spec.serviceAccount = account;
    const found = (info: AccountInfo | undefined): void => {
      if (!info) throw forbidden(a, `error looking up service account ${a.namespace}/${account}: serviceaccount "${account}" not found`);
      use(spec, account, info);
    };
    const info = accountInfo(ctx.store, a.namespace, account);
    if (info instanceof Promise) return info.then(found);
    found(info);
  };
  return {
    name: 'ServiceAccount',
    handles: (op, def, sub) => op === 'CREATE' && isPod(def) && sub === '',
    admit(a) {
      if (!a.object || isMirror(a.object)) return;
      return withAccount(a, (spec, account, info) => {
        if (info.enforceMountable) checkMountable(a, spec, account, info);
        mutate(spec, info);
      });
    },
    validate(a) {
      const pod = a.object;
      if (!pod || !isDict(pod.spec)) return;
      if (isMirror(pod)) {
        if (typeof pod.spec.serviceAccountName === 'string' && pod.spec.serviceAccountName !== '') throw forbidden(a, 'a mirror pod may not reference service accounts');
        if (secretRefs(pod.spec).length || list(pod.spec.imagePullSecrets).length) throw forbidden(a, 'a mirror pod may not reference secrets');
      }
    },
  };
}
