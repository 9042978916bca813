/**
 * `corectl scheduler` as a child process: options reach the daemon, it serves /healthz,
 * binds a pod, and exits 0 on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { freePort, startApiserver } from '../helpers/apiserver.js';
import { createNode, createPod, until, waitBound, waitEvent } from './cluster.js';
import { makeNode, makePod } from './fixtures.js';

const api = await startApiserver();
t.teardown(() => api.stop());
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0 });
t.teardown(() => client.close());

t.test('runs as a process and stops on SIGTERM', async (t) => {
  const port = await freePort();
  const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
  const child = spawn(process.execPath, [
    '--input-type=module', '-e', `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'scheduler', `--coreconfig=${api.coreconfigPath}`, '--leader-elect=false', `--port=${port}`, '--bind-address=127.0.0.1',
    '--scheduler-name=my-scheduler',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });

  await until('healthz', async () => {
    try { return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200 ? true : undefined; } catch { return undefined; }
  });
  await createNode(client, makeNode('solo'));
  await createPod(client, makePod('mine', { schedulerName: 'my-scheduler' }));
  t.equal(await waitBound(client, 'mine'), 'solo');
  const ev = await waitEvent(client, 'mine', 'Scheduled');
  t.equal((ev.source as { component?: string }).component, 'my-scheduler', 'events name the scheduler');
  child.kill('SIGTERM');
  t.equal(await exited, 0, stderr);
});
