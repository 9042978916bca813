#!/usr/bin/env node
// The private containerd of `make up` / `make down`, kept under <dir> (= <data-dir>/containerd):
//   node scripts/containerd-setup.mjs check       exit 0 when a private containerd can run here,
//                                                 else print the reason and exit 1
//   node scripts/containerd-setup.mjs up <dir>    write the config once (reused afterwards: same
//                                                 bridge, same pod subnet), start containerd in the
//                                                 background unless it already runs (pid in
//                                                 <dir>/containerd.pid, log in <dir>/containerd.log),
//                                                 import the offline busybox images (busybox also
//                                                 as localhost/busybox:static), write the registry
//                                                 mirrors and seed the local mirror
//                                                 (registry-mirror.mjs), print the CRI endpoint
//                                                 (unix://...) on stdout
//   node scripts/containerd-setup.mjs stop <dir>  stop containerd (and the mirror) only: pods keep
//                                                 running under their shims (as when a node's
//                                                 containerd restarts), and the next `up` reconnects
//                                                 to them, so the node agent adopts them; says how many
//   node scripts/containerd-setup.mjs down <dir>  remove every pod sandbox through CRI, stop
//                                                 containerd, kill leftover shims of this instance,
//                                                 unmount what is left under <dir>, stop the
//                                                 local registry mirror
// The building blocks are the compiled test helpers (dist/test/helpers/containerd.js), so the
// configuration is the one the containerd tests use. CORECTL_DIST names another build dir.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { prepareRegistries, seedMirror, stopMirror } from './registry-mirror.mjs';

const dist = resolve(process.env.CORECTL_DIST ?? 'dist');
const helpers = () => import(pathToFileURL(join(dist, 'test/helpers/containerd.js')).href);
const cri = () => import(pathToFileURL(join(dist, 'src/daemons/nodeagent/runtime/cri/cri-runtime.js')).href);

/** The busybox image under a tag other than latest (see up()). */
const LOCAL_BUSYBOX = 'localhost/busybox:static';
const note = (m) => process.stderr.write(`containerd-setup: ${m}\n`);

function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** The pid in <dir>/containerd.pid when that process is our containerd. */
function runningPid(dir) {
  let pid;
  try { pid = Number(readFileSync(join(dir, 'containerd.pid'), 'utf8').trim()); } catch { return undefined; }
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (!argv[0]?.endsWith('containerd') || !argv.includes(join(dir, 'config.toml'))) return undefined;
  } catch { return undefined; }
  return pid;
}

function answers(socketPath) {
  return spawnSync('ctr', ['-a', socketPath, 'version'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

/** 10.42.<n>.0/24 that no route uses (k3s' pod range, away from the tests' 10.88.x). */
function pickSubnet() {
  const routes = spawnSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' }).stdout ?? '';
  for (let n = 0; n < 256; n++) {
    if (!routes.includes(`10.42.${n}.`)) return `10.42.${n}.0/24`;
  }
  throw new Error('no free 10.42.x.0/24 subnet for pods');
}

async function up(dir) {
  const { writeContainerdConfig, importImages } = await helpers();
  const configPath = join(dir, 'config.toml');
  const socketPath = join(dir, 'containerd.sock');
  const imageTar = join(dir, 'images.oci.tar');
  if (!existsSync(configPath) || !existsSync(imageTar)) {
    const layout = await writeContainerdConfig(dir, { subnet: pickSubnet() });
    note(`wrote ${layout.configPath} (bridge ${layout.bridge}, pods in ${layout.subnet})`);
  }
  // Registry mirrors (registry-mirror.mjs): a changed registry configuration restarts containerd.
  const reg = await prepareRegistries(dir).catch((e) => { note(`registries: ${e.message}`); return { changed: false }; });
  let pid = runningPid(dir);
  if (pid && reg.changed) {
    note('registry configuration changed: restarting containerd');
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && pidAlive(pid); i++) await sleep(100);
    pid = undefined;
  }
  if (pid && answers(socketPath)) {
    note(`containerd already running (pid ${pid})`);
  } else {
    if (pid) { process.kill(pid, 'SIGKILL'); await sleep(200); }
    const logFd = openSync(join(dir, 'containerd.log'), 'a');
    const child = spawn('containerd', ['--config', configPath], { detached: true, stdio: ['ignore', logFd, logFd] });
    closeSync(logFd);
    child.unref();
    pid = child.pid;
    writeFileSync(join(dir, 'containerd.pid'), `${pid}\n`);
    const deadline = Date.now() + 30_000;
    let delay = 50;
    while (!answers(socketPath)) {
      if (!pidAlive(pid)) throw new Error(`containerd exited; see ${join(dir, 'containerd.log')}`);
      if (Date.now() > deadline) throw new Error(`containerd did not answer within 30s; see ${join(dir, 'containerd.log')}`);
      await sleep(delay);
      delay = Math.min(delay * 2, 500);
    }
    note(`containerd started (pid ${pid}, log ${join(dir, 'containerd.log')})`);
  }
  const images = importImages({ socketPath, imageTar });
  // `:latest` means imagePullPolicy Always, and there is no registry to pull from: a second
  // name with another tag lets `kubectl create deployment --image=...` use the local image.
  const tag = spawnSync('ctr', ['-a', socketPath, '-n', 'k8s.io', 'images', 'tag', '--force', 'localhost/busybox:latest', LOCAL_BUSYBOX], { encoding: 'utf8' });
  if (tag.status !== 0) throw new Error(`ctr images tag failed: ${(tag.stderr ?? '').trim()}`);
  note(`images ready: ${[...images, LOCAL_BUSYBOX].join(', ')}`);
  await seedMirror(reg.mirror, socketPath).catch((e) => note(e.message));
  process.stdout.write(`unix://${socketPath}\n`);
}


function unmountUnder(dir) {
  let info = '';
  try { info = readFileSync('/proc/self/mountinfo', 'utf8'); } catch { return; }
  const points = info.split('\n').map((l) => l.split(' ')[4] ?? '').filter((p) => p.startsWith(`${dir}/`));
  for (const p of points.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', p], { stdio: 'ignore' });
}

async function down(dir) {
  const socketPath = join(dir, 'containerd.sock');
  const pid = runningPid(dir);
  if (pid && answers(socketPath)) {
    // Pods go first, through CRI, so that containers, network namespaces and IPs are released.
    try {
      const { CriRuntime } = await cri();
      const rt = new CriRuntime({ endpoint: `unix://${socketPath}`, requestTimeoutMs: 15_000 });
      const pods = await rt.listPodSandbox();
      await Promise.all(pods.map(async (p) => {
        await rt.stopPodSandbox(p.id).catch(() => undefined);
        await rt.removePodSandbox(p.id).catch(() => undefined);
      }));
      await rt.close();
      if (pods.length) note(`removed ${pods.length} pod sandbox(es)`);
    } catch (e) {
      note(`could not remove pods through CRI (${e.message}); stopping containerd anyway`);
    }
  }
  if (pid) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && pidAlive(pid); i++) await sleep(100);
    if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
    note(`containerd (pid ${pid}) stopped`);
  } else {
    note('containerd is not running');
  }
  const { shimPids } = await helpers();
  for (const shim of shimPids(socketPath)) { try { process.kill(shim, 'SIGKILL'); } catch { /* gone */ } }
  unmountUnder(dir);
  rmSync(join(dir, 'containerd.pid'), { force: true });
  await stopMirror(dir);
}

async function stop(dir) {
  const socketPath = join(dir, 'containerd.sock');
  const pid = runningPid(dir);
  if (!pid) { note('containerd is not running'); return; }
  let kept = '';
  if (answers(socketPath)) {
    try {
      const { CriRuntime } = await cri();
      const rt = new CriRuntime({ endpoint: `unix://${socketPath}`, requestTimeoutMs: 15_000 });
      const pods = (await rt.listPodSandbox()).filter((p) => p.state === 'ready');
      const containers = (await rt.listContainers()).filter((c) => c.state === 'running');
      await rt.close();
      if (pods.length) kept = `${pods.length} pod(s) with ${containers.length} running container(s) keep running: make up adopts them; REMOVE_PODS=1 make down removes them`;
    } catch (e) {
      note(`could not list pods through CRI (${e.message})`);
    }
  }
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && pidAlive(pid); i++) await sleep(100);
  if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
  note(`containerd (pid ${pid}) stopped`);
  if (kept) note(kept);
  rmSync(join(dir, 'containerd.pid'), { force: true });
  await stopMirror(dir);
}

async function check() {
  const { containerdSkipReason } = await helpers();
  const reason = containerdSkipReason();
  if (reason) { process.stdout.write(`${reason}\n`); process.exitCode = 1; }
}

const [cmd, dirArg] = process.argv.slice(2);
try {
  if (cmd === 'check') await check();
  else if ((cmd === 'up' || cmd === 'down' || cmd === 'stop') && dirArg) await ({ up, down, stop }[cmd])(resolve(dirArg));
  else { note('usage: containerd-setup.mjs check | up <dir> | stop <dir> | down <dir>'); process.exitCode = 2; }
} catch (e) {
  note(e.message);
  process.exitCode = 1;
}
