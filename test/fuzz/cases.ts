/**
 * Fuzz request cases: each is one HTTP request plus what the oracle must check afterwards —
 * for a write answered with an error, that nothing was written (`absent`: the named object
 * must not exist; `unchanged`: the fixture keeps its resourceVersion and is not being deleted).
 */
import * as yaml from 'js-yaml';
import { mutateBytes, mutateJson } from './mutate.js';
import type { Prng } from './prng.js';
import { SEEDS } from './seeds.js';

export const NS = 'fuzz';

export interface Fixture {
  readonly kind: string;
  readonly path: string;
  object: Record<string, unknown>;
  protobuf?: Buffer;
}

export interface FuzzCase {
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
  /** What must hold when the answer is an error. */
  readonly expectOnError?: { absent?: string; unchanged?: Fixture };
}

const PATCH_TYPES = [
  'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml',
];

const QUERY_NAMES = ['resourceVersion', 'resourceVersionMatch', 'limit', 'continue', 'fieldSelector', 'labelSelector', 'watch', 'timeoutSeconds',
  'allowWatchBookmarks', 'sendInitialEvents', 'dryRun', 'fieldManager', 'fieldValidation', 'force', 'propagationPolicy', 'gracePeriodSeconds',
  'orphanDependents', 'pretty', 'includeUninitialized', 'export', 'exact', 'container', 'follow', 'tailLines', 'sinceSeconds', 'limitBytes'];
const QUERY_VALUES = ['', '0', '-1', '1', '9223372036854775807', '9223372036854775808', '18446744073709551616', 'abc', 'true', 'false', 'All', 'Strict',
  'Warn', 'Ignore', 'Exact', 'NotOlderThan', 'Background', 'Foreground', 'Orphan', 'a=b', 'a!=b', 'a in (b,c)', 'metadata.name=x', 'spec.nodeName=',
  'status.phase!=Running', '!a', 'a,,b', '%zz', '%00', '\u00e9', '(', 'a=b=c', 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJcdTAwMDAifQ', '1e3', '0x10'];

const BAD_PATH_PARTS = ['api', 'apis', 'v1', 'v2', 'namespaces', NS, 'default', 'pods', 'status', 'scale', 'log', 'exec', 'proxy', 'watch', 'openapi',
  '..', '.', '%2e%2e', '%2F', '%00', '%ff', '\u00e9', '~', '*', 'a'.repeat(300), '', 'apps', 'batch', 'x.example.com', 'finalize', 'binding', 'eviction',
  'ephemeralcontainers', 'token', 'approval', 'attach', 'portforward', 'nodes', 'version', 'healthz', 'metrics', 'livez', 'readyz'];

const CONTENT_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', 'text/plain', '', 'application/json; charset=utf-16',
  'application/json;;', '*/*', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'application/apply-patch+yaml', 'application/json-patch+json'];
const ACCEPTS = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', '*/*', 'text/html', '', 'application/json;as=Table;v=v1;g=meta.k8s.io',
  'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', 'application/json;as=Bogus;v=v9;g=x', 'application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch', 'x/y;q=0'];

let counter = 0;
const fresh = (): string => `fz-${(++counter).toString(36)}-${Date.now().toString(36).slice(-4)}`;

const seedKinds = Object.keys(SEEDS);
/** CRDs make the server serve a new resource each: rarely. */
function pickKind(rng: Prng): string {
  const k = rng.pick(seedKinds);
  return k === 'customresourcedefinitions' && !rng.chance(0.05) ? 'configmaps' : k;
}

/** The object's path; undefined for a name no path can carry (a lone surrogate). */
function itemPath(kind: string, name: string): string | undefined {
  const s = SEEDS[kind]!;
  try {
    return `${s.collection(NS)}/${encodeURIComponent(name)}`;
  } catch {
    return undefined;
  }
}

function absent(path: string | undefined): Pick<FuzzCase, 'expectOnError'> {
  return path ? { expectOnError: { absent: path } } : {};
}

function json(v: unknown): Buffer { return Buffer.from(JSON.stringify(v)); }

/** YAML text of a mutant; JSON (also YAML) for what the YAML writer refuses. */
function toYaml(v: unknown): Buffer {
  try { return Buffer.from(yaml.dump(v)); } catch { return json(v); }
}

function randomQuery(rng: Prng): string {
  const n = 1 + rng.int(4);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`${rng.pick(QUERY_NAMES)}=${encodeURIComponent(rng.pick(QUERY_VALUES))}`);
  if (rng.chance(0.2)) parts.push(rng.pick(['%', '&&', '=', 'a=%', '%zz=1']));
  return parts.join('&');
}

/** A random request case. `fixtures` are objects that exist and may be updated, patched or deleted. */
export function nextCase(rng: Prng, fixtures: Fixture[]): FuzzCase {
  const r = rng.int(100);
  if (r < 22) return createCase(rng);
  if (r < 30) return yamlCreateCase(rng);
  if (r < 38) return protobufCase(rng, fixtures);
  if (r < 48) return updateCase(rng, rng.pick(fixtures));
  if (r < 66) return patchCase(rng, rng.pick(fixtures));
  if (r < 72) return deleteCase(rng, rng.pick(fixtures));
  if (r < 84) return queryCase(rng, fixtures);
  if (r < 92) return pathCase(rng);
  return headerCase(rng);
}

function createCase(rng: Prng): FuzzCase {
  const kind = pickKind(rng);
  const s = SEEDS[kind]!;
  const name = fresh();
  const mutant = mutateJson(rng, s.make(name, NS)) as Record<string, unknown>;
  const m = mutant && typeof mutant === 'object' ? (mutant['metadata'] as Record<string, unknown> | undefined) : undefined;
  const mName = m && typeof m === 'object' && typeof m['name'] === 'string' ? m['name'] : name;
  const query = rng.chance(0.3) ? `?${rng.pick(['fieldValidation=Strict', 'fieldValidation=Warn', 'fieldValidation=Ignore', 'dryRun=All', 'fieldManager=fz', 'pretty=true'])}` : '';
  return {
    label: `create ${kind} json`, method: 'POST', path: s.collection(NS) + query, headers: { 'content-type': 'application/json' }, body: json(mutant),
    // Only the case's own fresh name is known to be free before the request (a mutant may name
    // something an earlier case made).
    ...(mName === name ? absent(itemPath(kind, mName)) : {}),
  };
}

function yamlCreateCase(rng: Prng): FuzzCase {
  const kind = pickKind(rng);
  const s = SEEDS[kind]!;
  const name = fresh();
  let text: Buffer = toYaml(rng.chance(0.5) ? mutateJson(rng, s.make(name, NS)) : s.make(name, NS));
  if (rng.chance(0.6)) text = mutateBytes(rng, text);
  if (rng.chance(0.1)) text = Buffer.concat([text, Buffer.from('\n---\n'), text]);
  if (rng.chance(0.05)) text = Buffer.from('a: &a [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n');
  return { label: `create ${kind} yaml`, method: 'POST', path: s.collection(NS), headers: { 'content-type': 'application/yaml' }, body: text, ...absent(itemPath(kind, name)) };
}

function protobufCase(rng: Prng, fixtures: Fixture[]): FuzzCase {
  const withPb = fixtures.filter((f) => f.protobuf);
  if (withPb.length === 0) return createCase(rng);
  const f = rng.pick(withPb);
  const body = mutateBytes(rng, f.protobuf!);
  const put = rng.chance(0.5);
  return {
    label: `${put ? 'update' : 'create'} ${f.kind} protobuf`, method: put ? 'PUT' : 'POST', path: put ? f.path : SEEDS[f.kind]!.collection(NS),
    headers: { 'content-type': 'application/vnd.kubernetes.protobuf' }, body, expectOnError: { unchanged: f },
  };
}

function updateCase(rng: Prng, f: Fixture): FuzzCase {
  const sub = f.kind === 'pods' || f.kind === 'deployments' ? rng.pick(['', '', '/status']) : f.kind === 'deployments' ? rng.pick(['', '/scale']) : '';
  const body = mutateJson(rng, f.object);
  return { label: `update ${f.kind}${sub}`, method: 'PUT', path: f.path + sub, headers: { 'content-type': 'application/json' }, body: json(body), expectOnError: { unchanged: f } };
}

function jsonPatchOps(rng: Prng, f: Fixture): unknown {
  const paths = ['/metadata/labels/a', '/metadata/labels', '/metadata/annotations/x~1y', '/spec', '/spec/replicas', '/metadata/name', '/metadata/resourceVersion',
    '/metadata/finalizers/-', '/spec/containers/0/image', '/spec/containers/5', '/data/a', '/x', '', '/', '/metadata/labels/~2', '/spec/template/spec/containers/-', '/status'];
  const ops = ['add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus'];
  const n = 1 + rng.int(4);
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const op: Record<string, unknown> = { op: rng.pick(ops), path: rng.pick(paths) };
    if (rng.chance(0.8)) op['value'] = rng.chance(0.5) ? mutateJson(rng, f.object) : rng.pick(['v', 1, null, {}, [], 'x'.repeat(70)]);
    if (rng.chance(0.3)) op['from'] = rng.pick(paths);
    out.push(op);
  }
  return rng.chance(0.1) ? mutateJson(rng, out) : out;
}

function patchCase(rng: Prng, f: Fixture): FuzzCase {
  const type = rng.pick(PATCH_TYPES);
  let body: Buffer;
  if (type === 'application/json-patch+json') body = json(jsonPatchOps(rng, f));
  else if (type === 'application/apply-patch+yaml') {
    const obj = mutateJson(rng, f.object) as Record<string, unknown>;
    body = rng.chance(0.5) ? toYaml(obj) : json(obj);
    if (rng.chance(0.2)) body = mutateBytes(rng, body);
  } else {
    const partial: Record<string, unknown> = { metadata: { labels: { a: 'b' } } };
    if (type.includes('strategic') && rng.chance(0.5)) {
      partial['spec'] = { containers: [{ name: 'c', image: 'x', $patch: rng.pick(['delete', 'replace', 'merge', 'bogus']) }], $setElementOrder: rng.pick([{}, [], 'x']) };
      partial['$retainKeys'] = rng.pick([['spec'], 'x', [1]]);
    }
    body = json(mutateJson(rng, rng.chance(0.5) ? partial : f.object));
    if (rng.chance(0.1)) body = mutateBytes(rng, body);
  }
  const q = type === 'application/apply-patch+yaml' ? `?fieldManager=${rng.pick(['fz', '', 'x'.repeat(200), '%00'])}${rng.chance(0.3) ? '&force=true' : ''}` : rng.chance(0.2) ? `?${randomQuery(rng)}&timeoutSeconds=1` : '';
  const sub = f.kind === 'pods' || f.kind === 'deployments' ? rng.pick(['', '', '/status']) : '';
  return { label: `patch ${f.kind}${sub} ${type.split('/')[1]}`, method: 'PATCH', path: f.path + sub + q, headers: { 'content-type': type }, body, expectOnError: { unchanged: f } };
}

function deleteCase(rng: Prng, f: Fixture): FuzzCase {
  const opts = mutateJson(rng, { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, propagationPolicy: 'Background', preconditions: { resourceVersion: '1' }, dryRun: ['All'] });
  return { label: `delete ${f.kind}`, method: 'DELETE', path: f.path + (rng.chance(0.3) ? `?${randomQuery(rng)}&timeoutSeconds=1` : ''), headers: { 'content-type': 'application/json' }, body: json(opts), expectOnError: { unchanged: f } };
}

function queryCase(rng: Prng, fixtures: Fixture[]): FuzzCase {
  const f = rng.pick(fixtures);
  const base = rng.chance(0.5) ? SEEDS[f.kind]!.collection(NS) : rng.chance(0.5) ? f.path : SEEDS[f.kind]!.collection(NS).replace(`/namespaces/${NS}`, '');
  // A watch must end: the oracle waits for whole answers. (Kubernetes takes any value of
  // watch but false and 0 as true, so every query gets a short timeout.)
  const q = `${randomQuery(rng)}&timeoutSeconds=1`;
  return { label: `get ${f.kind} query`, method: rng.pick(['GET', 'GET', 'GET', 'HEAD', 'DELETE']), path: `${base}?${q}`, headers: { accept: rng.pick(ACCEPTS) },
    ...(base === f.path ? { expectOnError: { unchanged: f } } : {}) };
}

function pathCase(rng: Prng): FuzzCase {
  const n = 1 + rng.int(7);
  const parts = Array.from({ length: n }, () => rng.pick(BAD_PATH_PARTS));
  let path = '/' + parts.join('/');
  if (rng.chance(0.2)) path += '/';
  if (rng.chance(0.2)) path += `?${randomQuery(rng)}&timeoutSeconds=1`;
  const method = rng.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND']);
  return { label: `path ${method}`, method, path, headers: { 'content-type': rng.pick(CONTENT_TYPES) }, ...(method === 'GET' || method === 'HEAD' ? {} : { body: json({}) }) };
}

function headerCase(rng: Prng): FuzzCase {
  const kind = pickKind(rng);
  const s = SEEDS[kind]!;
  const name = fresh();
  const headers: Record<string, string> = { 'content-type': rng.pick(CONTENT_TYPES), accept: rng.pick(ACCEPTS) };
  if (rng.chance(0.3)) headers['content-encoding'] = rng.pick(['gzip', 'br', 'deflate', 'identity', 'x']);
  if (rng.chance(0.3)) headers['accept-encoding'] = rng.pick(['gzip', '*', 'gzip;q=0', 'x']);
  if (rng.chance(0.2)) headers['x-fuzz'] = 'x'.repeat(rng.pick([10, 8000, 60000]));
  if (rng.chance(0.2)) headers['user-agent'] = rng.pick(['', '\u00e9', 'kubectl/v1.33.0 (linux/amd64)']);
  return { label: `create ${kind} headers`, method: 'POST', path: s.collection(NS), headers, body: json(s.make(name, NS)), ...absent(itemPath(kind, name)) };
}
