// The Node flags of the corectl launcher's first line, which the benches start their API server
// children with too: parsed, accepted by this Node, and the launcher still starts with them.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { apiserverArgs, launcherNodeFlags } from '../../bench/lib/apiserver-child.js';

t.test('the launcher names node with flags that node accepts', async (t) => {
  const flags = launcherNodeFlags();
  t.ok(flags.length > 0 && flags.every((f) => f.startsWith('--')), `flags ${flags.join(' ')}`);
  t.ok(flags.some((f) => /^--initial-old-space-size=\d+$/.test(f)), 'full GCs are skipped below a configured heap size');
  const r = spawnSync(process.execPath, [...flags, '-p', 'process.execArgv.join(" ")'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  t.equal(r.status, 0, r.stderr);
  const seen = r.stdout.trim().split(' ');
  t.ok(flags.every((f) => seen.includes(f)), `node ran with ${r.stdout.trim()}`);
  const launcher = fileURLToPath(new URL('../../../bin/nodeagent', import.meta.url));
  const v = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', launcher, '--version'], { encoding: 'utf8' });
  t.equal(v.status, 0, v.stderr);
  t.match(v.stdout, /^nodeagent v\d/);
});

t.test('bench API server children run with the launcher flags first', async (t) => {
  const pki = { certFile: '/c', keyFile: '/k', caFile: '/ca' } as Parameters<typeof apiserverArgs>[2];
  const args = apiserverArgs('/x/cli.js', '/d', pki, 1234, ['--inspect-port=1']);
  t.same(args.slice(0, launcherNodeFlags().length + 1), [...launcherNodeFlags(), '--inspect-port=1']);
});
