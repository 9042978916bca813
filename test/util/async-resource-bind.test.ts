// The lean AsyncResource.prototype.bind behaves as Node's: the bound function runs in the
// resource's async scope, with the given this (or its caller's), the arguments and fn's length;
// asyncResource reads and sets the resource; a non-function is refused as Node refuses it.
import t from 'tap';
import { AsyncLocalStorage, AsyncResource, executionAsyncId } from 'node:async_hooks';
import { installLeanAsyncResourceBind } from '../../src/util/async-resource-bind.js';

const nodeBind = AsyncResource.prototype.bind;
t.equal(installLeanAsyncResourceBind(), true, 'installed');
t.equal(installLeanAsyncResourceBind(), true, 'installing again keeps it');
t.not(AsyncResource.prototype.bind, nodeBind);

t.test('runs fn in the resource scope with thisArg, or the caller this, and the arguments', async (t) => {
  const als = new AsyncLocalStorage<string>();
  let r!: AsyncResource;
  let withThis!: (a: number, b: number) => unknown;
  let callerThis!: (a: number) => unknown;
  const ctx = { name: 'ctx' };
  als.run('inside', () => {
    r = new AsyncResource('Test');
    // (Node's bind takes a thisArg that @types/node does not declare.)
    const bindWith = r.bind.bind(r) as unknown as <F>(fn: F, thisArg: unknown) => F;
    withThis = bindWith(function (this: unknown, a: number, b: number) {
      return { self: this, a, b, store: als.getStore(), id: executionAsyncId() };
    }, ctx);
    callerThis = r.bind(function (this: unknown, a: number) { return { self: this, a, store: als.getStore() }; });
  });
  t.equal(als.getStore(), undefined, 'outside the store');
  t.same(withThis(1, 2), { self: ctx, a: 1, b: 2, store: 'inside', id: r.asyncId() });
  const holder = { f: callerThis };
  t.same(holder.f(3), { self: holder, a: 3, store: 'inside' });
  t.equal(withThis.length, 2, "fn's length");
  t.equal(callerThis.length, 1);
});

t.test('asyncResource reads and sets the resource (deprecated, as in Node)', async (t) => {
  const warnings: string[] = [];
  const onWarning = (w: Error & { code?: string }): void => { warnings.push(w.code ?? ''); };
  process.on('warning', onWarning);
  t.teardown(() => { process.off('warning', onWarning); });
  const r = new AsyncResource('Test');
  const f = r.bind(() => 1) as (() => number) & { asyncResource: AsyncResource };
  t.equal(f.asyncResource, r);
  const other = new AsyncResource('Other');
  f.asyncResource = other;
  t.equal(f.asyncResource, other);
  t.ok(Object.keys(f).includes('asyncResource'), 'enumerable, as in Node');
  const g = r.bind(() => 2) as (() => number) & { asyncResource: AsyncResource };
  t.equal(g.asyncResource, r, 'each bound function has its own resource');
  await new Promise((resolve) => setImmediate(resolve));
  t.ok(warnings.includes('DEP0172'), 'the deprecation warning');
});

t.test('the static bind and a non-function', async (t) => {
  const f = AsyncResource.bind((x: number) => x * 2);
  t.equal(f(21), 42);
  t.throws(() => new AsyncResource('Test').bind(42 as unknown as () => void), { code: 'ERR_INVALID_ARG_TYPE' });
});
