/**
 * A leaner `AsyncResource.prototype.bind` for this process, installed at start.
 *
 * Why: Node 20's bind gives each bound function its own pair of accessor functions for the
 * deprecated `asyncResource` property. Accessors that differ per object cannot share a hidden
 * class, so each call makes a new one, and hidden classes live in the old generation from
 * birth. Each of them points, through its accessors, at the bound function's closure: the
 * function bound and whatever it holds. A young-generation GC takes every pointer from the old
 * generation as a root, so all of that survives every scavenge, is promoted, and waits for a
 * full GC. Node's HTTP/2 client binds once per request (`ClientHttp2Session.request`), so every
 * request a client makes, its stream and everything the stream reaches, was promoted. Measured:
 * binding small closures for 2 s (100 per event-loop turn) promoted 161 MB and caused 29 full
 * GCs, none and 5 with this bind; a bare HTTP/2 client at 11 000 requests/s promoted about
 * 30 MB/s.
 *
 * This bind does what Node's does (the bound function runs `fn` through `runInAsyncScope` with
 * `thisArg`, or with its own `this` when none was given; `length` is fn's; `asyncResource` reads
 * and sets the resource, with the same deprecation warning), but the accessors are shared by all
 * bound functions, so they share hidden classes. The resource of each bound function is kept in
 * a WeakMap.
 *
 * Contract: `installLeanAsyncResourceBind()` is idempotent and returns true once installed;
 * it changes nothing and returns false if `AsyncResource.prototype.bind` is not Node's own
 * (someone else replaced it). Single-threaded.
 */
import { AsyncResource } from 'node:async_hooks';
import { deprecate } from 'node:util';

const resources = new WeakMap<object, AsyncResource>();
const DEPRECATION = 'The asyncResource property on bound functions is deprecated';

const asyncResourceAccessor: PropertyDescriptor = {
  configurable: true,
  enumerable: true,
  get: deprecate(function (this: object) { return resources.get(this); }, DEPRECATION, 'DEP0172'),
  set: deprecate(function (this: object, v: AsyncResource) { resources.set(this, v); }, DEPRECATION, 'DEP0172'),
};

type AnyFn = (...args: unknown[]) => unknown;

function leanBind(this: AsyncResource, fn: AnyFn, thisArg?: unknown): AnyFn {
  if (typeof fn !== 'function') {
    throw Object.assign(new TypeError(`The "fn" argument must be of type function. Received ${fn === null ? 'null' : typeof fn}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  const resource = this;
  let bound: AnyFn;
  if (thisArg === undefined) {
    bound = function (this: unknown, ...args: unknown[]) {
      return resource.runInAsyncScope(fn, this, ...args);
    };
  } else {
    bound = resource.runInAsyncScope.bind(resource, fn, thisArg) as AnyFn;
  }
  resources.set(bound, resource);
  Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, value: fn.length, writable: false });
  Object.defineProperty(bound, 'asyncResource', asyncResourceAccessor);
  return bound;
}

const nodeBind = AsyncResource.prototype.bind;

export function installLeanAsyncResourceBind(): boolean {
  const proto = AsyncResource.prototype as unknown as { bind: unknown };
  if (proto.bind === leanBind) return true;
  if (proto.bind !== nodeBind) return false;
  proto.bind = leanBind;
  return true;
}
