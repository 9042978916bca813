// What main() sets up for every daemon before dispatching: the lean AsyncResource.bind
// (util/async-resource-bind.ts).
import t from 'tap';
import { AsyncResource } from 'node:async_hooks';
import { main } from '../../src/cli.js';

t.test('main installs the lean AsyncResource.bind', async (t) => {
  const nodeBind = AsyncResource.prototype.bind;
  const write = process.stdout.write;
  let out = '';
  process.stdout.write = ((chunk: string | Uint8Array) => { out += String(chunk); return true; }) as typeof process.stdout.write;
  let code: number;
  try {
    code = await main(['node', 'corectl', 'apiserver', '--version']);
  } finally {
    process.stdout.write = write;
  }
  t.equal(code, 0);
  t.match(out, /apiserver v\d/);
  t.not(AsyncResource.prototype.bind, nodeBind, 'bind replaced');
  const r = new AsyncResource('Test');
  t.equal(r.bind(() => 7)(), 7, 'and it still binds');
});
