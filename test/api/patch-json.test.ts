import t, { type Test } from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import { applyJsonPatch, formatJsonPointer, parseJsonPointer } from '../../src/api/patch/json-patch.js';

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function fails(t: Test, fn: () => unknown, code: number, message?: RegExp): void {
  try {
    fn();
    t.fail(`expected ${code}`);
  } catch (e) {
    t.ok(isApiError(e), 'an ApiError');
    if (isApiError(e)) {
      t.equal(e.code, code);
      if (message) t.match(e.message, message);
    }
  }
}

const doc = () => deepFreeze({
  metadata: { name: 'x', labels: { 'app.kubernetes.io/name': 'web', 'a~b': '1' } },
  spec: { containers: [{ name: 'a', image: 'nginx' }, { name: 'b', image: 'busybox' }], replicas: 1 },
});

t.test('add, remove, replace', async (t) => {
  const d = doc();
  const out = applyJsonPatch(d, [
    { op: 'add', path: '/metadata/labels/tier', value: 'front' },
    { op: 'add', path: '/spec/containers/1', value: { name: 'mid', image: 'x' } },
    { op: 'add', path: '/spec/containers/-', value: { name: 'last', image: 'y' } },
    { op: 'replace', path: '/spec/replicas', value: 3 },
    { op: 'remove', path: '/spec/containers/0' },
    { op: 'add', path: '/spec/paused', value: null },
  ]) as { spec: { containers: { name: string }[]; replicas: number; paused: null }; metadata: { labels: Record<string, string> } };
  t.same(out.spec.containers.map((c) => c.name), ['mid', 'b', 'last']);
  t.equal(out.spec.replicas, 3);
  t.equal(out.spec.paused, null);
  t.equal(out.metadata.labels['tier'], 'front');
  t.equal((d.spec.containers as unknown[]).length, 2, 'input untouched');
});

t.test('pointer escapes ~0 and ~1', async (t) => {
  t.same(parseJsonPointer('/a~1b/c~0d/~01'), ['a/b', 'c~d', '~1']);
  t.equal(formatJsonPointer(['a/b', 'c~d']), '/a~1b/c~0d');
  t.same(parseJsonPointer(''), []);
  const out = applyJsonPatch(doc(), [
    { op: 'replace', path: '/metadata/labels/app.kubernetes.io~1name', value: 'api' },
    { op: 'remove', path: '/metadata/labels/a~0b' },
  ]) as { metadata: { labels: Record<string, string> } };
  t.same(out.metadata.labels, { 'app.kubernetes.io/name': 'api' });
  fails(t, () => applyJsonPatch(doc(), [{ op: 'remove', path: '/metadata/labels/a~2b' }]), 422, /'~' must be followed by '0' or '1'/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'remove', path: 'metadata' }]), 422, /must be empty or start with '\/'/);
});

t.test('move, copy, test', async (t) => {
  const out = applyJsonPatch(doc(), [
    { op: 'test', path: '/spec/replicas', value: 1 },
    { op: 'copy', from: '/spec/containers/0', path: '/spec/initContainers' },
    { op: 'move', from: '/metadata/labels', path: '/metadata/annotations' },
    { op: 'test', path: '/spec/initContainers', value: { image: 'nginx', name: 'a' } },
  ]) as { spec: Record<string, unknown>; metadata: Record<string, unknown> };
  t.same(out.spec['initContainers'], { name: 'a', image: 'nginx' });
  t.equal(out.metadata['labels'], undefined);
  t.same(out.metadata['annotations'], { 'app.kubernetes.io/name': 'web', 'a~b': '1' });
  const same = applyJsonPatch(doc(), [{ op: 'move', from: '/spec', path: '/spec' }]);
  t.same(same, doc(), 'move onto itself is a no-op');
  fails(t, () => applyJsonPatch(doc(), [{ op: 'move', from: '/spec', path: '/spec/inner' }]), 422, /into one of its own children/);
});

t.test('negative indexes count from the end; a missing value tests as null', async (t) => {
  const out = applyJsonPatch(doc(), [
    { op: 'replace', path: '/spec/containers/-1/image', value: 'last' },
    { op: 'add', path: '/spec/containers/-2', value: { name: 'z' } },
    { op: 'test', path: '/spec/nothing', value: null },
  ]) as { spec: { containers: { name: string; image?: string }[] } };
  t.same(out.spec.containers.map((c) => c.name), ['z', 'a', 'b']);
  t.equal(out.spec.containers[2]!.image, 'last');
  fails(t, () => applyJsonPatch(doc(), [{ op: 'remove', path: '/spec/containers/-3' }]), 422, /out of bounds/);
});

t.test('the whole document', async (t) => {
  t.same(applyJsonPatch(doc(), [{ op: 'replace', path: '', value: { a: 1 } }]), { a: 1 });
  t.same(applyJsonPatch(doc(), [{ op: 'add', path: '', value: [1] }, { op: 'add', path: '/-', value: 2 }]), [1, 2]);
  t.same(applyJsonPatch(doc(), [{ op: 'test', path: '', value: doc() }]), doc());
});

t.test('failures name the operation index (422)', async (t) => {
  fails(t, () => applyJsonPatch(doc(), [{ op: 'test', path: '/spec/replicas', value: 1 }, { op: 'test', path: '/spec/replicas', value: 2 }]), 422,
    /^json patch test operation 1 failed: test failed/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'replace', path: '/spec/missing', value: 1 }]), 422, /replace operation 0 failed: missing path: \/spec\/missing/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'remove', path: '/spec/containers/2' }]), 422, /out of bounds/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'add', path: '/spec/containers/3', value: 1 }]), 422, /out of bounds/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'add', path: '/spec/containers/01', value: 1 }]), 422, /invalid array index/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'add', path: '/nope/deeper', value: 1 }]), 422, /missing path: \/nope/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'add', path: '/spec/replicas/x', value: 1 }]), 422, /not an object or a list/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'add', path: '/x' }]), 422, /missing "value"/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'frobnicate', path: '/x' }]), 422, /unknown operation "frobnicate"/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'copy', path: '/x' }]), 422, /missing or non-string "from"/);
  fails(t, () => applyJsonPatch(doc(), [{ op: 'remove', path: '' }]), 422, /whole document/);
  try {
    applyJsonPatch(doc(), [{ op: 'test', path: '/spec/replicas', value: 5 }]);
  } catch (e) {
    if (isApiError(e)) {
      t.equal(e.reason, 'Invalid');
      t.equal(e.status.details?.causes?.[0]?.field, '/spec/replicas');
    }
  }
});

t.test('malformed bodies are 400', async (t) => {
  fails(t, () => applyJsonPatch(doc(), { op: 'add' }), 400, /must be a list of operations/);
  fails(t, () => applyJsonPatch(doc(), [1]), 400, /operation 0 must be an object/);
});

t.test('amplification limits', async (t) => {
  const many = Array.from({ length: 10001 }, () => ({ op: 'test', path: '/spec/replicas', value: 1 }));
  fails(t, () => applyJsonPatch(doc(), many), 413, /^The allowed maximum operations in a JSON patch is 10000, got 10001$/);
  t.doesNotThrow(() => applyJsonPatch(doc(), many.slice(0, 10000)));
  // Doubling a 1 KiB value: each copy adds the size of what it copies.
  const ops: unknown[] = [{ op: 'add', path: '/a', value: ['x'.repeat(1024)] }];
  for (let i = 0; i < 14; i++) ops.push({ op: 'copy', from: '/a', path: `/b${i}` }, { op: 'add', path: '/a/-', value: 0 }, { op: 'copy', from: '/a', path: '/a/-' });
  fails(t, () => applyJsonPatch({}, ops), 422, /exceeds the limit of 3145728 bytes/);
  fails(t, () => applyJsonPatch({ a: 'x'.repeat(100) }, [{ op: 'copy', from: '/a', path: '/b' }, { op: 'copy', from: '/a', path: '/c' }], { maxCopyBytes: 150 }), 422, /copied values/);
  t.doesNotThrow(() => applyJsonPatch({ a: 'x'.repeat(100) }, [{ op: 'copy', from: '/a', path: '/b' }], { maxCopyBytes: 150 }));
});

t.test('a "__proto__" key is plain data', async (t) => {
  const out = applyJsonPatch({}, JSON.parse('[{"op":"add","path":"/__proto__","value":{"polluted":true}}]')) as Record<string, unknown>;
  t.equal(({} as Record<string, unknown>)['polluted'], undefined);
  t.same(Object.keys(out), ['__proto__']);
});

t.test('deep nesting is a 400, not a crash', async (t) => {
  let deep: unknown = 1;
  for (let i = 0; i < 200000; i++) deep = [deep];
  fails(t, () => applyJsonPatch({}, [{ op: 'add', path: '/a', value: deep }]), 400, /nested too deeply/);
});
