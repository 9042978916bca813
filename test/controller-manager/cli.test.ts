import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { freePort, startApiserver } from '../helpers/apiserver.js';
import { DEPLOY, RS, waitFor } from './fixtures/cluster.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

function startManager(args: string[]): { child: ReturnType<typeof spawn>; exited: Promise<number | null>; stderr: () => string } {
  const child = spawn(process.execPath, [
    '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'controller-manager', ...args,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-64000); });
  const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  return { child, exited, stderr: () => err };
}

t.test('corectl controller-manager as a process', async (t) => {
  const api = await startApiserver({ process: true });
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), qps: 0, contentType: 'application/json' });
  t.teardown(async () => { client.close(); await api.stop(); });

  await t.test('rejects an unknown controller name', async (t) => {
    const m = startManager([`--coreconfig=${api.coreconfigPath}`, '--port=0', '--leader-elect=false', '--controllers=*,nosuch']);
    t.not(await m.exited, 0);
    t.match(m.stderr(), /nosuch/);
  });

  await t.test('runs the deployment controller and stops on SIGTERM', async (t) => {
    const port = await freePort();
    const m = startManager([`--coreconfig=${api.coreconfigPath}`, `--port=${port}`, '--address=127.0.0.1', '--leader-elect=false', '--log-format=json']);
    t.teardown(() => { if (m.child.exitCode === null) m.child.kill('SIGKILL'); });
    await client.create(DEPLOY, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'proc' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'proc' } }, template: { metadata: { labels: { app: 'proc' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
    });
    await waitFor('replica set', async () => (await client.list(RS, { labelSelector: 'app=proc' })).items.length === 1, 20_000);
    const pods = await waitFor('pods', async () => {
      const l = await client.list({ group: '', version: 'v1', resource: 'pods', namespace: 'default' }, { labelSelector: 'app=proc' });
      return l.items.length === 2 && l.items;
    });
    t.equal(pods.length, 2);
    m.child.kill('SIGTERM');
    t.equal(await m.exited, 0, 'clean exit');
    t.match(m.stderr(), /not implemented yet/, 'unimplemented controllers are announced');
  });
});
