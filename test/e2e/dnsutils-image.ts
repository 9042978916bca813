/**
 * A `dnsutils` image for the services e2e, built offline from the host: the busybox layer of
 * oci-image.ts plus a second layer holding the host's /usr/bin/nslookup (Debian's
 * bind9-dnsutils) and /usr/bin/openssl with the shared libraries ldd names.
 *  - nslookup: it stands in for the dnsutils image Kubernetes' DNS debugging guide runs
 *    `nslookup kubernetes.default` in. busybox's own nslookup (>= 1.29) does not apply the
 *    search path to a name with a dot, so in a busybox pod that lookup is NXDOMAIN, on
 *    Kubernetes with CoreDNS too.
 *  - openssl: busybox's wget speaks TLS through `openssl s_client` when it is on PATH; its own
 *    TLS code cannot complete a handshake with a server whose certificate is ECDSA (the API
 *    server's here: "TLS error from peer (alert code 40)").
 * (Not a test file itself.)
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { buildBusyboxLayer, createTar, type TarEntry } from '../helpers/oci-image.js';

export const DNSUTILS_IMAGE = 'localhost/dnsutils:e2e';
const NSLOOKUP = '/usr/bin/nslookup';
const OPENSSL = '/usr/bin/openssl';

/** false when the image can be built here, else why not. */
export function dnsutilsSkipReason(): false | string {
  if (!existsSync(NSLOOKUP)) return `${NSLOOKUP} not installed (Debian package bind9-dnsutils)`;
  if (!existsSync(OPENSSL)) return `${OPENSSL} not installed (Debian package openssl)`;
  if (spawnSync('ldd', ['--version'], { stdio: 'ignore' }).status !== 0) return 'ldd not found';
  return false;
}

/** The programs, the libraries ldd resolves for them and the program interpreter. */
function closure(programs: readonly string[]): string[] {
  const files = new Set<string>(programs);
  for (const program of programs) {
    const r = spawnSync('ldd', [program], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ldd ${program}: ${r.stderr}`);
    for (const line of r.stdout.split('\n')) {
      const m = /=>\s+(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
      if (m?.[1]) files.add(m[1]);
    }
  }
  return [...files];
}

function layer(files: readonly string[]): Buffer {
  const dirs = new Set<string>();
  for (const f of files) {
    const parts = f.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) dirs.add(`${parts.slice(0, i).join('/')}/`);
  }
  const entries: TarEntry[] = [...dirs].sort().map((d) => ({ name: d, type: 'dir' }));
  // readFileSync follows symbolic links: the library lands under the name the loader asks for.
  for (const f of files) entries.push({ name: f.slice(1), type: 'file', mode: 0o755, data: readFileSync(f) });
  return createTar(entries);
}

const blob = (data: Buffer): { digest: string; data: Buffer } => ({ digest: `sha256:${createHash('sha256').update(data).digest('hex')}`, data });

/** Writes an OCI image-layout tar of DNSUTILS_IMAGE to `path` (for `ctr images import`). */
export async function writeDnsutilsImageTar(path: string): Promise<string> {
  const layers = [blob(buildBusyboxLayer()), blob(layer(closure([NSLOOKUP, OPENSSL])))];
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const config = blob(Buffer.from(JSON.stringify({
    architecture: arch, os: 'linux', created: '1970-01-01T00:00:00Z',
    config: { Cmd: ['sh'], Env: ['PATH=/usr/bin:/bin'], WorkingDir: '/' },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
  })));
  const manifest = blob(Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: config.data.length },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: l.digest, size: l.data.length })),
  })));
  const index = Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [{
      mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: manifest.digest, size: manifest.data.length,
      annotations: { 'io.containerd.image.name': DNSUTILS_IMAGE, 'org.opencontainers.image.ref.name': 'e2e' },
    }],
  }));
  const entries: TarEntry[] = [
    { name: 'oci-layout', type: 'file', data: Buffer.from('{"imageLayoutVersion":"1.0.0"}') },
    { name: 'index.json', type: 'file', data: index },
    { name: 'blobs/', type: 'dir' },
    { name: 'blobs/sha256/', type: 'dir' },
    ...[...layers, config, manifest].map((b): TarEntry => ({ name: `blobs/sha256/${b.digest.slice(7)}`, type: 'file', data: b.data })),
  ];
  await writeFile(path, createTar(entries));
  return DNSUTILS_IMAGE;
}
