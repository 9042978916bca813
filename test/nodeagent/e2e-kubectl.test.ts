/**
 * Unmodified kubectl against the API server with a node agent (fake runtime): the node is
 * Ready with our version and runtime, a pod created with `kubectl run` becomes Running with an
 * IP, and `kubectl delete --wait` returns once the agent has stopped and finally deleted it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent } from '../../src/daemons/nodeagent/main.js';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';

const run = promisify(execFile);
const bin = kubectl(33);
if (!bin) {
  t.plan(0, 'kubectl.1.33 not installed');
} else {
  const api = await startApiserver();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-kubectl-'));
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=kube-node', `--root-dir=${join(dir, 'root')}`,
    `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1',
    '--resolv-conf=', '--node-status-update-frequency=1s',
  ]);
  const agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), skipProcessTweaks: true, relistPeriodMs: 100 });
  t.teardown(async () => {
    await agent.stop({ stopPods: true });
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const k = async (...args: string[]): Promise<string> => (await run(bin, ['--kubeconfig', api.coreconfigPath, ...args])).stdout;
  const until = async (what: string, fn: () => Promise<boolean>): Promise<void> => {
    const end = Date.now() + 20_000;
    while (!(await fn().catch(() => false))) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  t.test('kubectl sees a Ready node and a Running pod', async (t) => {
    await until('node Ready', async () => /kube-node\s+Ready\s/.test(await k('get', 'nodes')));
    const wide = await k('get', 'nodes', '-o', 'wide');
    t.match(wide, /v1\.33\.0\+corectl/);
    t.match(wide, /fake:\/\/0\.1\.0/);
    await k('run', 'web', '--image=localhost/busybox:latest', '--image-pull-policy=IfNotPresent', '--overrides={"spec":{"nodeName":"kube-node"}}');
    await until('pod Running', async () => /web\s+1\/1\s+Running\s+0/.test(await k('get', 'pods')));
    t.match(await k('get', 'pod', 'web', '-o', 'jsonpath={.status.podIP}'), /^\d+\.\d+\.\d+\.\d+$/);
    const described = await k('describe', 'pod', 'web');
    t.match(described, /Started\s+\S+\s+kubelet\s+Started container web/);
    await k('delete', 'pod', 'web', '--wait=true', '--timeout=30s');
    t.match(await k('get', 'pods', '--ignore-not-found'), /^$/);
  });
}
