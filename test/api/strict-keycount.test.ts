// The strict checker counts object keys during its own walk (the duplicate-key test compares
// that count with the keys in the raw text): the count must equal a plain walk's for any body,
// well-formed or not, or a duplicate key could go unreported.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { checkFields, checkedKeyCount, countJsonKeys } from '../../src/api/codec/strict.js';
import { messageForObject, schema } from '../../src/api/schema/registry.js';

const pod = schema.forKind('', 'v1', 'Pod')!;
const deployment = schema.forKind('apps', 'v1', 'Deployment')!;

t.test('odd bodies: unknown subtrees, wrong types, maps, lists, raw extensions', async (t) => {
  const bodies: [string, Record<string, unknown>, typeof pod][] = [
    ['unknown subtree', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, bogus: { a: { b: 1, c: [{ d: 2 }] } } }, pod],
    ['object for a scalar', { metadata: { name: { x: 1, y: { z: 2 } } } }, pod],
    ['list for an object', { spec: [{ a: 1 }, { b: { c: 2 } }] }, pod],
    ['object for a list', { spec: { containers: { a: { b: 1 } } } }, pod],
    ['map with objects', { metadata: { labels: { a: { b: 1 }, c: 'd' }, annotations: [{ x: 1 }] } }, pod],
    ['typeMeta objects', { apiVersion: { a: 1 }, kind: [{ b: 2 }] }, pod],
    ['list elements', { spec: { containers: [{ name: 'c', env: [{ name: 'e', valueFrom: { fieldRef: { fieldPath: 'x', extra: { y: 1 } } } }] }, 'str', 5, null] } }, pod],
    ['quantities and int-or-string', { spec: { containers: [{ name: 'c', resources: { limits: { cpu: { odd: 1 } } }, ports: [{ containerPort: 1, name: { n: 1 } }] }] } }, pod],
    ['deployment template', { spec: { strategy: { rollingUpdate: { maxSurge: { a: 1 } } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c' }] } } } }, deployment],
    ['nulls', { metadata: null, spec: { containers: null, volumes: [null, { name: 'v', emptyDir: null }] } }, pod],
  ];
  for (const [name, body, msg] of bodies) {
    const { walked, counted } = checkedKeyCount(body, msg, schema);
    t.equal(walked, counted, name);
  }
  // A duplicate inside an unknown subtree is still found (reported under the unknown field only).
  const raw = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","name":"q"},"spec":{"containers":[{"name":"c","image":"i","image":"j"}]}}';
  const r = checkFields(JSON.parse(raw), pod, schema, { rawJson: raw });
  t.same(r.duplicate, ['metadata.name', 'spec.containers[0].image']);
});

const fixtureDir = [join(process.cwd(), '..', 'shared', 'k8s-testdata', 'HEAD'), '/work/shared/k8s-testdata/HEAD'].find((d) => existsSync(d));
t.test('Kubernetes HEAD fixtures: the walk counts every key once', { skip: fixtureDir ? false : 'no k8s-testdata/HEAD' }, async (t) => {
  let checked = 0;
  for (const f of readdirSync(fixtureDir!).filter((x) => x.endsWith('.json')).sort()) {
    const o = JSON.parse(readFileSync(join(fixtureDir!, f), 'utf8')) as Record<string, unknown> & { apiVersion?: string; kind?: string };
    const msg = messageForObject(o.apiVersion ?? '', o.kind ?? '');
    if (!msg) continue;
    checked++;
    const { walked, counted } = checkedKeyCount(o, msg, schema);
    t.equal(walked, counted, f);
  }
  t.ok(checked > 30, `${checked} fixtures`);
});

t.test('countJsonKeys: the keys of any JSON text, long and escaped strings included', async (t) => {
  let seed = 7;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const pieces = ['a', 'b', '"', '\\', ':', '{', '}', ',', ' ', 'é', '\n', '\\"', '"\\', 'xyz'];
  const str = (): string => {
    const len = [0, 1, 5, 63, 64, 65, 130, 300][rnd(8)]!;
    let s = '';
    while (s.length < len) s += pieces[rnd(pieces.length)];
    return s;
  };
  const value = (depth: number): unknown => {
    const r = rnd(depth > 3 ? 3 : 6);
    if (r === 0) return str();
    if (r === 1) return rnd(1000);
    if (r === 2) return null;
    if (r === 3) return Array.from({ length: rnd(4) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (let k = rnd(5); k > 0; k--) o[str() + String(k)] = value(depth + 1);
    return o;
  };
  const keysOf = (v: unknown): number => {
    if (typeof v !== 'object' || v === null) return 0;
    if (Array.isArray(v)) return v.reduce((n: number, x) => n + keysOf(x), 0);
    return Object.values(v).reduce((n: number, x) => n + 1 + keysOf(x), 0);
  };
  for (let i = 0; i < 500; i++) {
    const v = { root: value(0), other: value(1) };
    const compact = JSON.stringify(v);
    t.equal(countJsonKeys(compact), keysOf(v), `compact #${i}`);
    const spaced = JSON.stringify(v, null, 2).replace(/": /g, '" \t: ');
    t.equal(countJsonKeys(spaced), keysOf(v), `spaced #${i}`);
  }
  t.equal(countJsonKeys('{"a":"unterminated'), 1);
  t.equal(countJsonKeys('{"a":1,"b":"' + 'x'.repeat(100) + '\\"'), 2, 'unterminated long string');
});
