/**
 * Value-syntax checks that a type parser alone cannot express, named by the option tables'
 * `syntax` field. Each returns a short reason when the value is bad, undefined when it is fine.
 */
import { CONTROLLER_NAMES, EVICTION_SIGNALS, OUR_CONTROLLER_NAMES, TLS_CIPHER_SUITES } from './known-names.js';
import { isQuantity, parseQuantity } from '../util/quantity.js';
import { parseDuration } from '../util/duration.js';

type Check = (value: unknown) => string | undefined;

const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const RESOURCE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const asList = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);
const asMap = (v: unknown): Record<string, string> => (v && typeof v === 'object' ? (v as Record<string, string>) : {});

function first<T>(items: readonly T[], test: (item: T) => string | undefined): string | undefined {
  for (const item of items) {
    const r = test(item);
    if (r !== undefined) return r;
  }
  return undefined;
}

const controllers: Check = (v) => first(asList(v), (entry) => {
  if (entry === '*') return undefined;
  const name = entry.startsWith('-') ? entry.slice(1) : entry;
  return CONTROLLER_NAMES.includes(name) || (OUR_CONTROLLER_NAMES as readonly string[]).includes(name) ? undefined : `unknown controller "${name}"`;
});

const tlsCipherSuites: Check = (v) => first(asList(v), (name) =>
  name in TLS_CIPHER_SUITES ? undefined : `unknown cipher suite "${name}" (use Go crypto/tls names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)`);

/** Keys: api/all, api/legacy, <version>, <group>/<version>, <group>/<version>/<resource>. */
const runtimeConfig: Check = (v) => first(Object.entries(asMap(v)), ([key, value]) => {
  if (value !== 'true' && value !== 'false') return `value of "${key}" must be true or false, not "${value}"`;
  if (key === 'api/all' || key === 'api/legacy') return undefined;
  const parts = key.split('/');
  if (parts.length === 1 && VERSION.test(key)) return undefined;
  const [group = '', version = '', resource] = parts;
  if (parts.length > 3 || !GROUP.test(group) || !VERSION.test(version) || (resource !== undefined && !RESOURCE.test(resource))) {
    return `key "${key}" is not api/all, api/legacy, <version>, <group>/<version> or <group>/<version>/<resource>`;
  }
  return undefined;
});

/** "group/version" or "version" (core) entries, or "group1=group2/version" for moved objects. */
const storageVersions: Check = (v) => {
  if (typeof v !== 'string' || v === '') return undefined;
  return first(v.split(','), (entry) => {
    const eq = entry.indexOf('=');
    const gv = eq < 0 ? entry : entry.slice(eq + 1);
    if (eq >= 0 && !GROUP.test(entry.slice(0, eq))) return `bad group in "${entry}"`;
    const parts = gv.split('/');
    const ok = parts.length === 1 ? VERSION.test(gv) : parts.length === 2 && GROUP.test(parts[0] ?? '') && VERSION.test(parts[1] ?? '');
    return ok ? undefined : `entry "${entry}" is not group/version (or version for the core group)`;
  });
};

/** "resource[.group]#size". */
const watchCacheSizes: Check = (v) => first(asList(v), (entry) => {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9.-]+)?#(\d+)$/.exec(entry);
  if (!m || (m[3] !== undefined && !GROUP.test(m[3].slice(1)))) return `entry "${entry}" is not resource[.group]#size`;
  return undefined;
});

/** "group/resource#server;server", servers as http(s)://host:port. */
const kvstoreOverrides: Check = (v) => first(asList(v), (entry) => {
  const hash = entry.indexOf('#');
  const gr = hash < 0 ? '' : entry.slice(0, hash);
  const slash = gr.indexOf('/');
  if (hash < 0 || slash < 0) return `entry "${entry}" is not group/resource#servers`;
  const group = gr.slice(0, slash), resource = gr.slice(slash + 1);
  if ((group !== '' && !GROUP.test(group)) || !RESOURCE.test(resource)) return `bad group/resource in "${entry}"`;
  const servers = entry.slice(hash + 1).split(';');
  return first(servers, (s) => (/^https?:\/\/[^\s/:]+(:\d+)?\/?$/.test(s) ? undefined : `bad server "${s}" in "${entry}" (expected http://ip:port)`));
});

function signalKey(key: string): string | undefined {
  return EVICTION_SIGNALS.includes(key) ? undefined : `unknown eviction signal "${key}" (one of ${EVICTION_SIGNALS.join(', ')})`;
}

function quantityOrPercent(key: string, value: string): string | undefined {
  if (value.endsWith('%')) {
    const n = Number(value.slice(0, -1));
    if (value.length < 2 || !Number.isFinite(n) || n < 0 || n > 100) return `"${key}" has bad percentage "${value}"`;
    return undefined;
  }
  if (!isQuantity(value) || parseQuantity(value) < 0) return `"${key}" needs a non-negative quantity or percentage, not "${value}"`;
  return undefined;
}

const evictionThresholds: Check = (v) => first(Object.entries(asMap(v)), ([k, val]) => signalKey(k) ?? quantityOrPercent(k, val));

const evictionGracePeriods: Check = (v) => first(Object.entries(asMap(v)), ([k, val]) => {
  const bad = signalKey(k);
  if (bad) return bad;
  try {
    if (parseDuration(val) < 0) return `grace period of "${k}" is negative`;
  } catch {
    return `grace period of "${k}" is not a duration: "${val}"`;
  }
  return undefined;
});

/** ResourceName=Quantity for reserved resources. */
const reservedResources: Check = (v) => first(Object.entries(asMap(v)), ([k, val]) => {
  if (!['cpu', 'memory', 'ephemeral-storage', 'pid'].includes(k)) return `unknown resource "${k}" (cpu, memory, ephemeral-storage or pid)`;
  return isQuantity(val) && parseQuantity(val) >= 0 ? undefined : `"${k}" needs a non-negative quantity, not "${val}"`;
});

/** ResourceName=Percentage; only memory is supported. */
const qosReserved: Check = (v) => first(Object.entries(asMap(v)), ([k, val]) => {
  if (k !== 'memory') return `only "memory" is supported, not "${k}"`;
  return /^\d+%$/.test(val) && Number(val.slice(0, -1)) <= 100 ? undefined : `"${k}" needs a percentage 0-100%, not "${val}"`;
});

export const SYNTAX_CHECKS = {
  controllers,
  'tls-cipher-suites': tlsCipherSuites,
  'runtime-config': runtimeConfig,
  'storage-versions': storageVersions,
  'watch-cache-sizes': watchCacheSizes,
  'kvstore-overrides': kvstoreOverrides,
  'eviction-thresholds': evictionThresholds,
  'eviction-grace-periods': evictionGracePeriods,
  'reserved-resources': reservedResources,
  'qos-reserved': qosReserved,
} as const satisfies Record<string, Check>;

export type SyntaxName = keyof typeof SYNTAX_CHECKS;
