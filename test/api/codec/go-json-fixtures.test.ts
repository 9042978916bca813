// Issue 36: JSON as Kubernetes writes it. Every JSON fixture in Kubernetes' own test data
// (../shared/k8s-testdata/HEAD, copied to test/fixtures/k8s-json) of a kind we serve, decoded as the API server decodes it
// (unknown fields dropped) and encoded with the API server's encoder, gives the fixture's key
// order — also after every object's keys were reversed, so the order comes from the encoder
// and not from the input. Compared as compact JSON (the fixtures are indented).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { goEscape } from '../../../src/api/codec/go-json.js';
import { encodeJson as encodeGoJson } from '../../../src/api/codec/json.js';
import { checkFields } from '../../../src/api/codec/strict.js';
import { messageForObject, schema } from '../../../src/api/schema/registry.js';

const dir = join(process.cwd(), 'test', 'fixtures', 'k8s-json');

/** Kinds whose encoding differs from the fixture, with the reason (none today). */
const DIFFERS: Record<string, string> = {};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A deep copy with every object's keys in reverse order, except inside embedded objects of
 * kinds we do not know (a RawExtension's bytes are passed through as the client sent them).
 */
function reversed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversed);
  if (!isObject(v)) return v;
  if (typeof v['kind'] === 'string' && typeof v['apiVersion'] === 'string' && !messageForObject(v['apiVersion'], v['kind'])) return v;
  const out: Json = {};
  for (const k of Object.keys(v).reverse()) out[k] = reversed(v[k]);
  return out;
}

t.test('the encoder writes every served kind of Kubernetes\' fixtures in their key order', async (t) => {
  let served = 0;
  const differing: string[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const fixture = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Json;
    const { apiVersion, kind } = fixture;
    const msg = typeof apiVersion === 'string' && typeof kind === 'string' ? messageForObject(apiVersion, kind) : undefined;
    if (!msg) continue;
    served++;
    checkFields(fixture, msg, schema, { prune: true });
    const want = goEscape(JSON.stringify(fixture)) + '\n';
    const asIs = encodeGoJson(JSON.parse(JSON.stringify(fixture))).toString('utf8');
    const shuffled = encodeGoJson(reversed(fixture)).toString('utf8');
    const name = file.replace(/\.json$/, '');
    if (asIs !== want || shuffled !== want) differing.push(name);
    if (!(name in DIFFERS)) {
      t.equal(asIs, want, `${name}: decoded and encoded`);
      t.equal(shuffled, want, `${name}: from reversed keys`);
    }
  }
  t.equal(served, 86, `${served} served kinds have fixtures`);
  t.same(differing, Object.keys(DIFFERS), 'the kinds that differ are the ones listed, with their reasons');
});

t.test('Go\'s encoder details', async (t) => {
  const cm = { data: { b: '<a&b>', a: '\u2028' }, metadata: { name: 'x' }, apiVersion: 'v1', kind: 'ConfigMap' };
  t.equal(encodeGoJson(cm).toString(), '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","creationTimestamp":null},"data":{"a":"\\u2028","b":"\\u003ca\\u0026b\\u003e"}}\n',
    'struct fields in Go order, map keys sorted, HTML characters escaped, a newline at the end');
  const same = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x', creationTimestamp: '2026-12-07T00:00:00Z' }, data: { a: '1' } };
  const { goOrder } = await import('../../../src/api/codec/go-json.js');
  t.equal(goOrder(same), same, 'an object already in order is not copied');
  const deployment = { kind: 'Deployment', apiVersion: 'apps/v1', metadata: { name: 'd', creationTimestamp: '2026-12-07T00:00:00Z' },
    spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80 }] }] } } } };
  t.equal(encodeGoJson(deployment).toString(), '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","creationTimestamp":"2026-12-07T00:00:00Z"},'
    + '"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"a":"b"}},'
    + '"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],"resources":{}}]}},"strategy":{}},"status":{}}\n',
    'what Go writes for members the object lacks: zero structs, a zero Time as null');
  const custom = { spec: { z: 1, a: 2 }, kind: 'Widget', apiVersion: 'example.com/v1' };
  t.equal(encodeGoJson(custom).toString(), `${JSON.stringify(custom)}\n`, 'a kind without a declaration keeps its order');
});

t.test('YAML as Kubernetes writes it: the JSON form, keys sorted, Go\'s YAML layout', async (t) => {
  const { encodeYaml } = await import('../../../src/api/codec/yaml.js');
  const { goOrder } = await import('../../../src/api/codec/go-json.js');
  const deployment = { kind: 'Deployment', apiVersion: 'apps/v1', metadata: { name: 'd', creationTimestamp: '2026-12-07T00:00:00Z' },
    spec: { replicas: 0, selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } };
  t.equal(encodeYaml(goOrder(deployment)).toString(), [
    'apiVersion: apps/v1', 'kind: Deployment', 'metadata:', '  creationTimestamp: "2026-12-07T00:00:00Z"', '  name: d', 'spec:', '  replicas: 0',
    '  selector:', '    matchLabels:', '      a: b', '  strategy: {}', '  template:', '    metadata:', '      creationTimestamp: null', '      labels:', '        a: b',
    '    spec:', '      containers:', '      - image: i', '        name: c', '        resources: {}', 'status: {}', '',
  ].join('\n'), 'what `kubectl create deployment --dry-run=client -o yaml` shows for the same object');
});
