// The README's kubectl tour, run line by line as the README prints it, against `corectl server`
// (a real process: API server, controller manager, scheduler and node agent in one). The lines
// come from README.md itself: every line of the tour's code block must match a step below, and
// every step must be used, so README and test cannot drift apart. Each line runs in bash, from a
// directory holding the repository's examples/, with `kubectl` = kubectl 1.33; a step then checks
// what the line's comment claims (objects, output, "then: curl URL"), not just the exit code.
// With containerd installed (as root) the node runs real containers through the private
// containerd `make up` prepares (scripts/containerd-setup.mjs); otherwise the node simulates
// containers and the steps that need processes (exec, port-forward, proxies, debug) are skipped.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { get } from 'node:http';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { containerdSkipReason } from '../helpers/containerd.js';

const bin = kubectl(33);
const noContainerd = containerdSkipReason();

/** The tour's command lines from README.md: [command, comment]. */
export function tourLines(readme: string): Array<[string, string]> {
  const from = readme.indexOf('## A tour with kubectl');
  const open = readme.indexOf('```\n', from);
  const close = readme.indexOf('\n```', open + 4);
  return readme.slice(open + 4, close).split('\n').filter((l) => l.trim() !== '').map((l) => {
    const m = /^(.*?)\s{2,}#\s?(.*)$/.exec(l);
    return m ? [m[1]!.trim(), m[2]!] : [l.trim(), ''];
  });
}

/** Starts make up's private containerd under `dir`; returns the server options for it. */
function containerdArgs(dir: string): string[] {
  const r = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', dir], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`containerd-setup up failed: ${r.stderr}`);
  return [`--container-runtime-endpoint=${r.stdout.trim()}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox'];
}

function fetchText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve(Buffer.concat(chunks).toString()));
    }).on('error', reject);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('README tour', { skip: bin ? false : 'kubectl.1.33 not installed', timeout: 300_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-tour-'));
  const dataDir = join(dir, 'data');
  const cdDir = join(dir, 'containerd');
  // The user's shell: kubectl is 1.33, KUBECONFIG is exported, the working directory has examples/.
  const work = join(dir, 'work');
  const pathDir = join(dir, 'bin');
  mkdirSync(work);
  mkdirSync(pathDir);
  symlinkSync(bin!, join(pathDir, 'kubectl'));
  symlinkSync(resolve('examples'), join(work, 'examples'));
  const env = { ...process.env, PATH: `${pathDir}:${process.env['PATH'] ?? ''}`, KUBECONFIG: join(dataDir, 'admin.coreconfig'), HOME: work, NODE_OPTIONS: '' };
  const runtimeArgs = noContainerd ? ['--container-runtime=fake'] : containerdArgs(cdDir);
  t.comment(noContainerd ? `simulated containers (${noContainerd})` : 'real containers through containerd');
  const server = startServer([
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=tour-node',
    ...runtimeArgs, `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0',
  ]);
  const background: Array<ReturnType<typeof spawn>> = [];
  t.teardown(async () => {
    for (const b of background) b.kill('SIGTERM');
    await server.stop();
    if (!noContainerd) spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', cdDir], { timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    await rm(dir, { recursive: true, force: true });
  });
  // Every "forbidden" a part of the cluster logs: under Node,RBAC none may be refused anything.
  const forbidden: string[] = [];
  let partial = '';
  server.child.stderr?.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) if (/forbidden/i.test(l) && /"part":"(controller-manager|scheduler|nodeagent)"/.test(l) && !/quota/.test(l)) forbidden.push(l);
  });
  await server.waitFor(/node tour-node Ready/, 60_000);

  /** Runs a README line in bash; throws with its stderr unless it exits 0. */
  const sh = (line: string): string => {
    const r = spawnSync('bash', ['-o', 'pipefail', '-c', line], { cwd: work, env, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`${line} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  const k = (...args: string[]): string => {
    const r = spawnSync(bin!, args, { cwd: work, env, encoding: 'utf8', timeout: 90_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  const json = (...args: string[]): any => JSON.parse(k(...args, '-o', 'json')); // eslint-disable-line @typescript-eslint/no-explicit-any
  const podsOf = (): any[] => json('get', 'pods', '-l', 'app=web').items.filter((p: any) => !p.metadata.deletionTimestamp); // eslint-disable-line @typescript-eslint/no-explicit-any
  const isWebPod = (name: string): boolean => podsOf().some((p) => p.metadata.name === name);
  const poll = async <T>(read: () => T, done: (v: T) => boolean, tries = 60): Promise<T> => {
    let v = read();
    for (let i = 0; i < tries && !done(v); i++) { await sleep(500); v = read(); }
    return v;
  };

  /** A `-it` line typed into as a person does: send `input`, wait for `expect`, then `exit`. */
  const interactive = async (line: string, input: string, expect: RegExp): Promise<string> => {
    const child = spawn('bash', ['-c', line], { cwd: work, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    try {
      for (let i = 0; i < 120 && !expect.test(out); i++) {
        if (i % 10 === 0) child.stdin.write(input + '\n');
        await sleep(250);
      }
      child.stdin.write('exit\n');
      child.stdin.end();
      await Promise.race([exited, sleep(20_000)]);
    } finally {
      child.kill('SIGTERM');
    }
    return out;
  };

  /** A `... &` line: started in the background; the comment's "then: curl URL" is fetched. */
  const backgrounded = async (line: string, comment: string): Promise<string> => {
    const child = spawn('bash', ['-c', `exec ${line.replace(/\s*&$/, '')}`], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    background.push(child);
    const url = /then: curl (\S+)/.exec(comment)?.[1];
    if (!url) throw new Error(`no "then: curl URL" in the comment of ${line}`);
    let text = '';
    for (let i = 0; i < 60; i++) {
      try { text = await fetchText(url); break; } catch { await sleep(500); }
    }
    child.kill('SIGTERM');
    return text.trim();
  };

  let firstRs: string[] = [];
  let rollouts = 0;
  const realOnly = noContainerd ? `no containerd: ${noContainerd}` : false;
  type Step = { re: RegExp; skip?: string | false; run: (line: string, comment: string) => Promise<void> | void; used?: boolean };
  const steps: Step[] = [
    { re: /^kubectl get nodes -o wide$/, run: (l) => {
      t.match(sh(l), /tour-node\s+Ready/);
      t.equal(json('get', 'nodes').items.length, 1, 'one node');
    } },
    { re: /^kubectl create deployment web /, run: (l) => { t.match(sh(l), /deployment.apps\/web created/); } },
    { re: /^kubectl rollout status deployment\/web$/, run: (l) => {
      t.match(sh(`${l} --timeout=90s`), /successfully rolled out/, `rollout ${++rollouts} done`);
    } },
    { re: /^kubectl get pods -o wide$/, run: (l) => {
      t.match(sh(l), /web-[a-z0-9]+-[a-z0-9]+\s+1\/1\s+Running/);
      const pods = podsOf();
      t.equal(pods.length, 1, 'one pod');
      t.match(pods[0].status.podIP, /^\d+\.\d+\.\d+\.\d+$/, 'the pod has an IP');
      t.equal(pods[0].spec.nodeName, 'tour-node', 'scheduled to the node');
    } },
    { re: /^kubectl scale deployment\/web --replicas=3$/, run: (l) => { sh(l); } },
    { re: /^kubectl set env deployment\/web GREETING=hello$/, run: (l) => {
      t.equal(json('get', 'deployment', 'web').status.readyReplicas, 3, 'three ready replicas before the change');
      firstRs = json('get', 'rs', '-l', 'app=web').items.map((r: { metadata: { name: string } }) => r.metadata.name);
      sh(l);
    } },
    { re: /^kubectl rollout undo deployment\/web$/, run: (l) => {
      const dep = json('get', 'deployment', 'web');
      t.equal(dep.spec.template.spec.containers[0].env?.[0]?.value, 'hello', 'revision 2 has the variable');
      t.ok(podsOf().every((p) => p.spec.containers[0].env?.[0]?.name === 'GREETING'), 'every pod runs revision 2');
      sh(l);
    } },
    { re: /^kubectl rollout history deployment\/web$/, run: (l) => {
      const dep = json('get', 'deployment', 'web');
      t.notOk(dep.spec.template.spec.containers[0].env, 'template back to the first revision');
      t.equal(dep.metadata.annotations['deployment.kubernetes.io/revision'], '3');
      const active = json('get', 'rs', '-l', 'app=web').items.filter((r: { spec: { replicas: number } }) => r.spec.replicas > 0);
      t.same(active.map((r: { metadata: { name: string } }) => r.metadata.name), firstRs, 'the first replica set scaled back up');
      t.match(sh(l), /2\s.*\n3\s/s, 'history lists revisions 2 and 3');
    } },
    { re: /^kubectl expose deployment web --port=80$/, run: (l) => {
      sh(l);
      t.match(json('get', 'service', 'web').spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/, 'cluster IP allocated');
    } },
    { re: /^kubectl get endpoints web$/, run: async (l) => {
      // The three pods that stay: after the rollout's undo, terminating pods of the other revision
      // leave the endpoints shortly after their deletion starts (a later step connects to them).
      const listed = (): string => (json('get', 'endpoints', 'web').subsets ?? [])
        .flatMap((s: { addresses?: Array<{ ip: string }> }) => (s.addresses ?? []).map((a) => a.ip)).sort().join(' ');
      const live = (): string => podsOf().map((p) => String(p.status.podIP)).sort().join(' ');
      const both = (): [string, string] => [listed(), live()];
      const [ips, pods] = await poll(both, ([a, b]) => a === b && a.split(' ').length === 3);
      t.equal(ips, pods, 'endpoints list the three pods, and only them');
      t.match(sh(l), /^web\s+\S+:80,\S+:80,\S+:80/m);
    } },
    { re: /^kubectl get endpointslices -l kubernetes.io\/service-name=web$/, run: async (l) => {
      const ready = (): number => json('get', 'endpointslices', '-l', 'kubernetes.io/service-name=web').items
        .flatMap((s: { endpoints?: Array<{ conditions?: { ready?: boolean } }> }) => s.endpoints ?? []).filter((e: { conditions?: { ready?: boolean } }) => e.conditions?.ready).length;
      t.equal(await poll(ready, (n) => n === 3), 3, 'the slices list the three ready pods');
      t.match(sh(l), /^web-[a-z0-9]+\s+IPv4\s+80\s/m);
    } },
    { re: /^kubectl exec deploy\/web -- cat \/etc\/hostname$/, skip: realOnly, run: (l) => {
      const name = sh(l).trim();
      t.ok(isWebPod(name), `exec ran in one of the pods (${name})`);
    } },
    { re: /^kubectl exec -it deploy\/web -- sh$/, skip: realOnly, run: async (l) => {
      const out = await interactive(l, 'echo shell-$((6*7))', /shell-42/);
      t.match(out, /shell-42/, 'the shell ran what was typed');
    } },
    { re: /^kubectl port-forward deploy\/web 8080:80 &$/, skip: realOnly, run: async (l, c) => {
      const page = await backgrounded(l, c);
      t.ok(isWebPod(page), `httpd answered through port-forward (${page})`);
    } },
    { re: /^kubectl get --raw \/api\/v1\/namespaces\/default\/services\/web:80\/proxy\/etc\/hostname$/, skip: realOnly, run: (l) => {
      const page = sh(l).trim();
      t.ok(isWebPod(page), `httpd answered through services/proxy (${page})`);
    } },
    { re: /^kubectl proxy &$/, skip: realOnly, run: async (l, c) => {
      const page = await backgrounded(l, c);
      t.ok(isWebPod(page), `httpd answered through kubectl proxy (${page})`);
    } },
    { re: /^kubectl debug -it /, skip: realOnly, run: async (l) => {
      // The line picks the first app=web pod: wait until the rollout's old pods are gone, or it
      // may pick one that is terminating, whose deletion ends the debug session (kubectl:
      // 'pods "" not found'), as it would for a person typing it that early.
      await poll(() => json('get', 'pods', '-l', 'app=web').items as Array<{ metadata: { deletionTimestamp?: string } }>, (ps) => ps.length === 3 && ps.every((p) => !p.metadata.deletionTimestamp), 120);
      const out = await interactive(l, 'ps', /httpd -f -p 80/);
      t.match(out, /httpd -f -p 80/, 'the ephemeral container sees the target container\'s httpd');
    } },
    { re: /^kubectl run hello /, run: (l) => { t.match(sh(l), /pod\/hello created/); } },
    { re: /^kubectl logs hello$/, run: async (l) => {
      const logs = await poll(() => spawnSync('bash', ['-c', l], { cwd: work, env, encoding: 'utf8', timeout: 30_000 }).stdout ?? '', (s) => s.includes('hello from corectl'));
      t.match(logs, /hello from corectl/, 'kubectl logs shows the container output');
    } },
    { re: /^kubectl create job once /, run: (l) => { t.match(sh(l), /job.batch\/once created/); } },
    { re: /^kubectl wait --for=condition=complete job\/once$/, run: (l) => {
      t.match(sh(`${l} --timeout=90s`), /job.batch\/once condition met/);
    } },
    { re: /^kubectl create cronjob tick /, run: (l) => {
      sh(l);
      t.equal(json('get', 'cronjob', 'tick').spec.schedule, '*/1 * * * *');
    } },
    { re: /^kubectl create pdb web /, run: async (l) => {
      sh(l);
      const pdb = await poll(() => json('get', 'pdb', 'web'), (p) => p.status?.currentHealthy === 3);
      t.equal(pdb.status.currentHealthy, 3, 'the disruption controller counts the three pods');
      t.equal(pdb.status.disruptionsAllowed, 1, 'one may go');
    } },
    { re: /^kubectl create quota small --hard=pods=10$/, run: async (l) => {
      sh(l);
      const q = await poll(() => json('get', 'quota', 'small'), (v) => v.status?.used?.pods !== undefined);
      t.equal(q.status.hard.pods, '10');
      t.match(k('describe', 'quota', 'small'), /pods\s+\d+\s+10/, 'describe shows used / hard');
    } },
    { re: /^kubectl delete deployment web$/, run: async (l) => {
      sh(l);
      const left = await poll(() => json('get', 'rs', '-l', 'app=web').items.length + json('get', 'pods', '-l', 'app=web').items.length, (n) => n === 0);
      t.equal(left, 0, 'replica sets and pods garbage-collected');
    } },
    { re: /^kubectl apply -f examples\/crontab-crd.yaml$/, run: (l) => {
      t.match(sh(l), /customresourcedefinition.apiextensions.k8s.io\/crontabs.stable.example.com created/);
    } },
    { re: /^kubectl wait --for=condition=established crd\/crontabs.stable.example.com$/, run: (l) => {
      t.match(sh(`${l} --timeout=30s`), /condition met/);
    } },
    { re: /^kubectl apply -f examples\/crontab.yaml$/, run: (l) => {
      t.match(sh(l), /crontab.stable.example.com\/nightly created/);
      t.equal(json('get', 'crontab', 'nightly').spec.replicas, 1, 'defaulted from the schema');
    } },
    { re: /^kubectl get crontabs$/, run: (l) => {
      t.match(sh(l), /^NAME\s+SPEC\s+REPLICAS\s+AGE\nnightly\s+0 3 \* \* \*\s+1\s+\S+/m, 'printer columns');
    } },
    { re: /^sh examples\/csr.sh alice \| kubectl apply -f -$/, run: (l) => {
      t.match(sh(l), /certificatesigningrequest.certificates.k8s.io\/alice created/);
      t.match(sh('kubectl get csr alice'), /^alice\s.*Pending$/m);
    } },
    { re: /^kubectl certificate approve alice$/, run: async (l) => {
      sh(l);
      const issued = await poll(() => json('get', 'csr', 'alice'), (c) => Boolean(c.status?.certificate));
      t.ok(issued.status?.certificate, 'the controller manager signed it');
    } },
    { re: /^kubectl get csr alice -o jsonpath=/, run: (l) => {
      sh(l);
      t.match(sh('openssl x509 -in alice.crt -noout -subject'), /CN ?= ?alice/, 'alice.crt is her certificate');
    } },
    { re: /^kubectl create rolebinding alice-view --clusterrole=view --user=alice$/, run: (l) => {
      t.match(sh(l), /rolebinding.rbac.authorization.k8s.io\/alice-view created/);
    } },
    { re: /^kubectl auth can-i list pods --as=alice$/, run: (l) => { t.equal(sh(l).trim(), 'yes', 'view lets alice list pods'); } },
    { re: /^kubectl auth can-i list secrets --as=alice$/, run: (l) => {
      // kubectl answers "no" with exit code 1.
      const r = spawnSync('bash', ['-c', l], { cwd: work, env, encoding: 'utf8', timeout: 30_000 });
      t.equal(r.stdout.trim(), 'no', 'view does not let alice list secrets');
      t.equal(r.status, 1);
      // Her own certificate, not only the admin's impersonation, is refused.
      const own = spawnSync(bin!, ['--server', json('config', 'view', '--minify', '--raw').clusters[0].cluster.server,
        '--certificate-authority', join(dataDir, 'pki', 'ca.crt'), '--client-certificate', join(work, 'alice.crt'), '--client-key', join(work, 'alice.key'),
        '--kubeconfig', '/dev/null', 'get', 'secrets'], { cwd: work, encoding: 'utf8', timeout: 30_000 });
      t.match(own.stderr, /secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default"/);
    } },
    { re: /^kubectl get pc$/, run: (l) => {
      const out = sh(l);
      t.match(out, /system-cluster-critical\s+2000000000/);
      t.match(out, /system-node-critical\s+2000001000/);
    } },
    { re: /^kubectl get cs$/, run: (l) => {
      t.match(sh(l), /^kvstore-0\s+Healthy/m, 'the embedded store is healthy');
    } },
  ];

  const lines = tourLines(readFileSync('README.md', 'utf8'));
  t.ok(lines.length > 20, `the README tour has ${lines.length} lines`);
  for (const [line, comment] of lines) {
    const step = steps.find((s) => s.re.test(line));
    if (!step) { t.fail(`README tour line without a step in this test: ${line}`); continue; }
    step.used = true;
    if (step.skip) { t.comment(`skipped (${step.skip}): ${line}`); continue; }
    t.comment(line);
    await step.run(line, comment);
  }
  for (const s of steps) if (!s.used) t.fail(`step ${s.re} matches no README tour line`);
  t.same(forbidden, [], 'no controller, scheduler or node agent request was refused');
});
