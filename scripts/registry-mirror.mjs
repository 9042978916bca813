// Registry mirrors for the private containerd of `make up` (used by containerd-setup.mjs):
// - the registries file, k3s' registries.yaml shape (mirrors + configs with auth/tls), is
//   $REGISTRIES_FILE or <data-dir>/registries.yaml; without one, and with Debian's
//   docker-registry installed, a local mirror of docker.io runs on 127.0.0.1:$MIRROR_PORT
//   (default 5000, storage and log under <dir>/mirror) and is the registries file;
// - it is written into containerd's config (hosts.toml under <dir>/certs.d, auth in config.toml),
//   replacing the registry section of an earlier make up;
// - once containerd runs, the local mirror is seeded with the offline busybox image as
//   docker.io/library/busybox:latest, so `kubectl create deployment web --image=busybox` pulls
//   (implicit :latest, policy Always) with no route to a public registry.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const dist = resolve(process.env.CORECTL_DIST ?? 'dist');
const registries = () => import(pathToFileURL(join(dist, 'src/daemons/nodeagent/images/registries.js')).href);
const note = (m) => process.stderr.write(`containerd-setup: ${m}\n`);
const REGISTRY_SECTION = '[plugins."io.containerd.grpc.v1.cri".registry]';

function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

function mirrorPid(dir) {
  try {
    const pid = Number(readFileSync(join(dir, 'mirror', 'registry.pid'), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('docker-registry') ? pid : undefined;
  } catch { return undefined; }
}

async function answers(addr) {
  try { return (await fetch(`http://${addr}/v2/`)).ok; } catch { return false; }
}

/** Starts the local mirror (once); returns its host:port, or undefined without docker-registry. */
async function startMirror(dir) {
  if (spawnSync('sh', ['-c', 'command -v docker-registry'], { stdio: 'ignore' }).status !== 0) return undefined;
  const mdir = join(dir, 'mirror');
  mkdirSync(join(mdir, 'storage'), { recursive: true });
  const portFile = join(mdir, 'port');
  const port = existsSync(portFile) ? readFileSync(portFile, 'utf8').trim() : (process.env.MIRROR_PORT ?? '5000');
  writeFileSync(portFile, `${port}\n`);
  const addr = `127.0.0.1:${port}`;
  if (mirrorPid(dir) && await answers(addr)) return addr;
  writeFileSync(join(mdir, 'config.yml'), `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${join(mdir, 'storage')}\n  delete:\n    enabled: true\nhttp:\n  addr: ${addr}\n`);
  const log = openSync(join(mdir, 'registry.log'), 'a');
  const child = spawn('docker-registry', ['serve', join(mdir, 'config.yml')], { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  writeFileSync(join(mdir, 'registry.pid'), `${child.pid}\n`);
  for (let i = 0; i < 100; i++) {
    if (await answers(addr)) { note(`local registry mirror on ${addr} (pid ${child.pid}, log ${join(mdir, 'registry.log')})`); return addr; }
    if (!pidAlive(child.pid)) break;
    await sleep(100);
  }
  note(`docker-registry did not answer on ${addr} (see ${join(mdir, 'registry.log')}); no local mirror`);
  return undefined;
}

/**
 * Writes the registries into containerd's config in <dir>; returns { changed, mirror } where
 * changed says config.toml differs from before (a running containerd must restart to see it).
 */
export async function prepareRegistries(dir) {
  const file = process.env.REGISTRIES_FILE || join(dirname(dir), 'registries.yaml');
  let text;
  let mirror;
  if (existsSync(file)) {
    text = readFileSync(file, 'utf8');
    note(`registries from ${file}`);
  } else {
    mirror = await startMirror(dir);
    if (!mirror) return { changed: false };
    text = `mirrors:\n  docker.io:\n    endpoint:\n      - "http://${mirror}"\n`;
  }
  const { parseRegistries, containerdRegistryConfig } = await registries();
  const certsDir = join(dir, 'certs.d');
  const conf = containerdRegistryConfig(parseRegistries(text), certsDir);
  rmSync(certsDir, { recursive: true, force: true });
  for (const h of conf.hosts) {
    mkdirSync(dirname(join(certsDir, h.path)), { recursive: true });
    writeFileSync(join(certsDir, h.path), h.content);
  }
  const configPath = join(dir, 'config.toml');
  const before = readFileSync(configPath, 'utf8');
  const cut = before.indexOf(REGISTRY_SECTION);
  const after = `${cut >= 0 ? before.slice(0, cut) : before}${conf.toml}`;
  if (after !== before) writeFileSync(configPath, after);
  return { changed: after !== before, mirror };
}

/** Pushes the offline busybox to the local mirror as library/busybox:latest unless it is there. */
export async function seedMirror(mirror, socketPath) {
  if (!mirror) return;
  try {
    if ((await fetch(`http://${mirror}/v2/library/busybox/manifests/latest`, { method: 'HEAD', headers: { Accept: 'application/vnd.oci.image.manifest.v1+json' } })).ok) return;
  } catch { /* push below */ }
  const ref = `${mirror}/library/busybox:latest`;
  const ctr = (...args) => spawnSync('ctr', ['-a', socketPath, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: 120_000 });
  const tag = ctr('images', 'tag', '--force', 'localhost/busybox:latest', ref);
  const push = tag.status === 0 ? ctr('images', 'push', '--plain-http', ref) : tag;
  ctr('images', 'rm', ref);
  if (push.status !== 0) throw new Error(`seeding the mirror failed: ${(push.stderr ?? '').trim()}`);
  note(`mirror seeded: busybox (docker.io/library/busybox:latest) from the offline image`);
}

export async function stopMirror(dir) {
  const pid = mirrorPid(dir);
  if (!pid) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && pidAlive(pid); i++) await sleep(100);
  if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
  rmSync(join(dir, 'mirror', 'registry.pid'), { force: true });
  note(`registry mirror (pid ${pid}) stopped`);
}
