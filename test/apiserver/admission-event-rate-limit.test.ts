/**
 * EventRateLimit's four limit types and their keys, on the plugin itself (the server test in
 * admission-plugins.test.ts covers the Namespace type end to end): Server, Namespace, User and
 * SourceAndObject buckets, the aggregated message when several limits are reached, the LRU of
 * keyed buckets, and the configuration's validation.
 */
import t from 'tap';
import { eventRateLimit, parseEventRateLimitConfig } from '../../src/daemons/apiserver/admission/event-rate-limit.js';
import type { AdmissionAttributes, AdmissionContext } from '../../src/daemons/apiserver/admission/types.js';
import type { ResourceDefinition } from '../../src/api/resources/types.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';

const events = { group: '', plural: 'events', kind: 'Event', namespaced: true } as unknown as ResourceDefinition;
const config = (limits: object[]): unknown => ({ apiVersion: 'eventratelimit.admission.k8s.io/v1alpha1', kind: 'Configuration', limits });

function plugin(limits: object[]): (a: Partial<AdmissionAttributes> & { user?: string }) => string {
  const ctx = { store: {} as ObjectStore, pluginConfigs: new Map([['EventRateLimit', parseEventRateLimitConfig(config(limits))]]) } as AdmissionContext;
  const p = eventRateLimit(ctx);
  return (a) => {
    const attrs = { operation: 'CREATE', def: events, subresource: '', namespace: 'ns', name: 'e', dryRun: false,
      request: { user: { name: a.user ?? 'alice', groups: [] }, version: 'v1' }, ...a } as AdmissionAttributes;
    try { p.validate!(attrs); return 'ok'; } catch (e) { return (e as Error).message; }
  };
}

const event = (component: string, name: string): object => ({
  source: { component, host: 'n1' }, involvedObject: { kind: 'Pod', namespace: 'ns', name, uid: 'u1', apiVersion: 'v1' },
});

t.test('each limit type keys its buckets as Kubernetes does', async (t) => {
  const server = plugin([{ type: 'Server', qps: 1, burst: 2 }]);
  t.same([server({ namespace: 'a' }), server({ namespace: 'b' }), server({ namespace: 'c' })],
    ['ok', 'ok', 'Too many requests: limit reached on type Server for key '], 'one bucket for the whole server');

  const ns = plugin([{ type: 'Namespace', qps: 1, burst: 1 }]);
  t.same([ns({ namespace: 'a' }), ns({ namespace: 'b' }), ns({ namespace: 'a' })], ['ok', 'ok', 'Too many requests: limit reached on type Namespace for key a']);

  const user = plugin([{ type: 'User', qps: 1, burst: 1 }]);
  t.same([user({ user: 'alice' }), user({ user: 'bob' }), user({ user: 'alice' })], ['ok', 'ok', 'Too many requests: limit reached on type User for key alice']);

  const so = plugin([{ type: 'SourceAndObject', qps: 1, burst: 1 }]);
  t.same([so({ object: event('kubelet', 'p1') as never }), so({ object: event('kubelet', 'p2') as never }), so({ object: event('kubelet', 'p1') as never })],
    ['ok', 'ok', 'Too many requests: limit reached on type SourceAndObject for key kubeletn1Podnsp1u1v1'], 'source, host and the involved object');
});

t.test('several limits reached: one aggregated message; an evicted key starts full again', async (t) => {
  const both = plugin([{ type: 'Namespace', qps: 1, burst: 1 }, { type: 'User', qps: 1, burst: 1 }]);
  both({});
  t.equal(both({}), 'Too many requests: [limit reached on type Namespace for key ns, limit reached on type User for key alice]');
  const lru = plugin([{ type: 'Namespace', qps: 1, burst: 1, cacheSize: 2 }]);
  t.same([lru({ namespace: 'a' }), lru({ namespace: 'b' }), lru({ namespace: 'c' }), lru({ namespace: 'a' })], ['ok', 'ok', 'ok', 'ok'],
    'a was evicted by c (cacheSize 2), so its bucket is new');
  t.equal(lru({ namespace: 'a' }), 'Too many requests: limit reached on type Namespace for key a');
});

t.test('configuration errors', async (t) => {
  t.throws(() => parseEventRateLimitConfig(undefined), /a configuration .* is required/);
  t.throws(() => parseEventRateLimitConfig(config([])), /limits: Required value/);
  t.throws(() => parseEventRateLimitConfig(config([{ type: 'Pod', qps: 1, burst: 1 }])), /limits\[0\]\.type: Unsupported value: "Pod"/);
  t.throws(() => parseEventRateLimitConfig(config([{ type: 'User', qps: 0, burst: 1 }])), /limits\[0\]\.qps: Invalid value: 0: must be positive/);
  t.throws(() => parseEventRateLimitConfig(config([{ type: 'User', qps: 1, burst: 1 }, { type: 'User', qps: 2, burst: 2 }])), /limits\[1\]\.type: Duplicate value: "User"/);
  t.throws(() => parseEventRateLimitConfig({ apiVersion: 'v1', kind: 'Configuration', limits: [] }), /expected Configuration of eventratelimit\.admission\.k8s\.io\/v1alpha1/);
});
