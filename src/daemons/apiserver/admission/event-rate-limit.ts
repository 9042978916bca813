/**
 * EventRateLimit: token buckets on core Event writes (create and update), per server, per
 * namespace, per user, or per event source and involved object, as configured by its own
 * eventratelimit.admission.k8s.io/v1alpha1 Configuration. A write over a limit is refused with
 * 429 TooManyRequests and Kubernetes' message `Too many requests: limit reached on type T for key K`.
 * Keyed buckets live in an LRU of cacheSize (Kubernetes' default 4096); an evicted key starts full again.
 */
import { ApiError } from '../../../api/meta/status.js';
import { expectKind } from './config-file.js';
import type { AdmissionAttributes, AdmissionPlugin, AdmissionContext } from './types.js';

export type LimitType = 'Server' | 'Namespace' | 'User' | 'SourceAndObject';
const TYPES: readonly LimitType[] = ['Server', 'Namespace', 'User', 'SourceAndObject'];
const DEFAULT_CACHE_SIZE = 4096;

export interface EventRateLimitConfig {
  readonly limits: ReadonlyArray<{ readonly type: LimitType; readonly qps: number; readonly burst: number; readonly cacheSize: number }>;
}

export function parseEventRateLimitConfig(raw: unknown): EventRateLimitConfig {
  if (raw === undefined) throw new Error('a configuration (eventratelimit.admission.k8s.io/v1alpha1 Configuration) is required');
  const doc = expectKind(raw, ['eventratelimit.admission.k8s.io/v1alpha1'], 'Configuration');
  const limits = doc['limits'];
  if (!Array.isArray(limits) || limits.length === 0) throw new Error('limits: Required value: must not be empty');
  const seen = new Set<string>();
  return {
    limits: limits.map((l: Record<string, unknown>, i) => {
      const type = l['type'] as LimitType;
      if (!TYPES.includes(type)) throw new Error(`limits[${i}].type: Unsupported value: ${JSON.stringify(l['type'])}: supported values: ${TYPES.map((t) => `"${t}"`).join(', ')}`);
      if (seen.has(type)) throw new Error(`limits[${i}].type: Duplicate value: ${JSON.stringify(type)}`);
      seen.add(type);
      const num = (k: string, dflt?: number): number => {
        const v = l[k] ?? dflt;
        if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`limits[${i}].${k}: Invalid value: must be an integer`);
        return v;
      };
      const qps = num('qps'), burst = num('burst'), cacheSize = num('cacheSize', type === 'Server' ? 0 : DEFAULT_CACHE_SIZE);
      if (qps <= 0) throw new Error(`limits[${i}].qps: Invalid value: ${qps}: must be positive`);
      if (burst <= 0) throw new Error(`limits[${i}].burst: Invalid value: ${burst}: must be positive`);
      if (cacheSize < 0) throw new Error(`limits[${i}].cacheSize: Invalid value: ${cacheSize}: must not be negative`);
      return { type, qps, burst, cacheSize: type === 'Server' ? 0 : (cacheSize || DEFAULT_CACHE_SIZE) };
    }),
  };
}

/** A token bucket (client-go's TryAccept): `burst` tokens, refilled at `qps` per second. */
class Bucket {
  private tokens: number;
  private at: number;
  constructor(private readonly qps: number, private readonly burst: number, now: number) { this.tokens = burst; this.at = now; }
  tryAccept(now: number): boolean {
    // `now` may precede the bucket's creation within one request: no negative refill.
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.qps);
      this.at = now;
    }
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Buckets by key, least recently used evicted beyond `size` (a Map keeps insertion order). */
class BucketCache {
  private readonly map = new Map<string, Bucket>();
  constructor(private readonly size: number, private readonly make: () => Bucket) {}
  get(key: string): Bucket {
    let b = this.map.get(key);
    if (b) this.map.delete(key);
    else b = this.make();
    this.map.set(key, b);
    if (this.map.size > this.size) this.map.delete(this.map.keys().next().value!);
    return b;
  }
}

interface EventShape {
  source?: { component?: string; host?: string };
  involvedObject?: { kind?: string; namespace?: string; name?: string; uid?: string; apiVersion?: string };
}

function keyOf(type: LimitType, a: AdmissionAttributes): string {
  switch (type) {
    case 'Server': return '';
    case 'Namespace': return a.namespace;
    case 'User': return a.request?.user.name ?? '';
    case 'SourceAndObject': {
      const e = (a.object ?? {}) as EventShape;
      const o = e.involvedObject ?? {};
      return [e.source?.component, e.source?.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion].map((s) => s ?? '').join('');
    }
  }
}

export function eventRateLimit(ctx: AdmissionContext): AdmissionPlugin {
  const config = ctx.pluginConfigs?.get('EventRateLimit') as EventRateLimitConfig;
  const now = (): number => performance.now();
  const enforcers = config.limits.map((l) => {
    const make = (): Bucket => new Bucket(l.qps, l.burst, now());
    const server = l.type === 'Server' ? make() : undefined;
    const cache = server ? undefined : new BucketCache(l.cacheSize, make);
    return { type: l.type, bucket: (key: string): Bucket => server ?? cache!.get(key) };
  });
  return {
    name: 'EventRateLimit',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && def.group === '' && def.plural === 'events' && sub === '',
    validate(a) {
      // Every limit takes its token (as Kubernetes); the refusal names each one reached.
      const t = now();
      const reached: string[] = [];
      for (const e of enforcers) {
        const key = keyOf(e.type, a);
        if (!e.bucket(key).tryAccept(t)) reached.push(`limit reached on type ${e.type} for key ${key}`);
      }
      if (reached.length) {
        throw new ApiError(429, 'TooManyRequests', `Too many requests: ${reached.length === 1 ? reached[0] : `[${reached.join(', ')}]`}`);
      }
    },
  };
}
