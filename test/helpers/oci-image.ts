/**
 * Builds, offline, an OCI image-layout tar holding two images made from the static busybox
 * binary, for importing into containerd (`ctr -n k8s.io images import`):
 *   localhost/pause:busybox   entrypoint `sleep 2147483647` (the sandbox "pause" image)
 *   localhost/busybox:latest  busybox with applet symlinks, /etc/passwd and /etc/group; cmd `sh`
 * Both share one uncompressed layer. Every mtime is 0, so the output is reproducible.
 * Debian's static busybox still resolves names through glibc's NSS, which loads its modules
 * at run time: the layer carries /etc/nsswitch.conf and the host's NSS modules with the C
 * library and loader they need (the same glibc the static busybox was built from, both from the
 * distribution), so wget, nslookup and ping resolve names in pods (nss-libs below).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';

export const PAUSE_IMAGE = 'localhost/pause:busybox';
export const BUSYBOX_IMAGE = 'localhost/busybox:latest';
export const DEFAULT_BUSYBOX_PATH = '/bin/busybox';

export interface TarEntry {
  readonly name: string;
  readonly type: 'file' | 'dir' | 'symlink';
  readonly mode?: number;
  readonly data?: Buffer;
  readonly linkname?: string;
}

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  let name = e.name;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new Error(`tar: name too long: ${name}`);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  h.write(name, 0, 100, 'utf8');
  h.write(octal(e.mode ?? (e.type === 'file' ? 0o644 : e.type === 'dir' ? 0o755 : 0o777), 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1'); // uid
  h.write(octal(0, 8), 116, 'latin1'); // gid
  h.write(octal(size, 12), 124, 'latin1');
  h.write(octal(0, 12), 136, 'latin1'); // mtime
  h.write('        ', 148, 'latin1'); // checksum placeholder: spaces
  h.write(e.type === 'file' ? '0' : e.type === 'dir' ? '5' : '2', 156, 'latin1');
  if (e.linkname) h.write(e.linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  h.write('root', 265, 'latin1');
  h.write('root', 297, 'latin1');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'latin1');
  return h;
}

/** A ustar archive of the entries, in the given order, with the two zero blocks at the end. */
export function createTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = e.type === 'file' ? (e.data ?? Buffer.alloc(0)) : Buffer.alloc(0);
    parts.push(header(e, data.length));
    if (data.length) {
      parts.push(data);
      const pad = (512 - (data.length % 512)) % 512;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function applets(busybox: string): string[] {
  const r = spawnSync(busybox, ['--list'], { encoding: 'utf8' });
  const fromBinary = r.status === 0 ? r.stdout.split('\n').map((s) => s.trim()).filter((s) => /^[a-z0-9_.[-]+$/i.test(s)) : [];
  const needed = ['sh', 'cat', 'echo', 'sleep', 'httpd', 'ls', 'ps', 'env', 'hostname', 'ip', 'wget', 'nc', 'true', 'false', 'printf', 'head', 'id', 'mkdir', 'rm', 'touch', 'date', 'kill'];
  return [...new Set([...fromBinary, ...needed])].filter((a) => a !== 'busybox').sort();
}

function ociArch(): string {
  switch (process.arch) {
    case 'x64': return 'amd64';
    case 'ia32': return '386';
    default: return process.arch; // arm64, arm, ppc64, s390x, riscv64 ...
  }
}

/** Where the C library lives for this architecture (Debian's multiarch layout), and its loader. */
function multiarch(): { dir: string; loader?: { path: string; link?: string } } {
  switch (process.arch) {
    case 'x64': return { dir: 'lib/x86_64-linux-gnu', loader: { path: 'lib/x86_64-linux-gnu/ld-linux-x86-64.so.2', link: 'lib64/ld-linux-x86-64.so.2' } };
    case 'arm64': return { dir: 'lib/aarch64-linux-gnu', loader: { path: 'lib/aarch64-linux-gnu/ld-linux-aarch64.so.1', link: 'lib/ld-linux-aarch64.so.1' } };
    default: return { dir: `lib/${process.arch}-linux-gnu` };
  }
}

export const NSSWITCH_CONF = 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n';

/** /etc/nsswitch.conf and, where the host has them, the NSS modules with libc and the loader. */
export function nssEntries(): TarEntry[] {
  const m = multiarch();
  const libs = ['libnss_files.so.2', 'libnss_dns.so.2', 'libresolv.so.2', 'libc.so.6'];
  const out: TarEntry[] = [{ name: 'etc/nsswitch.conf', type: 'file', data: Buffer.from(NSSWITCH_CONF) }];
  const found = libs.filter((l) => existsSync(`/${m.dir}/${l}`));
  if (found.length === 0) return out;
  out.push({ name: 'lib/', type: 'dir' }, { name: `${m.dir}/`, type: 'dir' });
  for (const l of found) out.push({ name: `${m.dir}/${l}`, type: 'file', mode: 0o755, data: readFileSync(`/${m.dir}/${l}`) });
  if (m.loader && existsSync(`/${m.loader.path}`)) {
    out.push({ name: m.loader.path, type: 'file', mode: 0o755, data: readFileSync(`/${m.loader.path}`) });
    if (m.loader.link) {
      const parent = m.loader.link.slice(0, m.loader.link.lastIndexOf('/') + 1);
      if (parent !== 'lib/') out.push({ name: parent, type: 'dir' });
      out.push({ name: m.loader.link, type: 'symlink', linkname: `/${m.loader.path}` });
    }
  }
  return out;
}

/** The shared root filesystem layer (an uncompressed tar). */
export function buildBusyboxLayer(busyboxPath = DEFAULT_BUSYBOX_PATH): Buffer {
  const entries: TarEntry[] = [
    { name: 'bin/', type: 'dir' },
    { name: 'bin/busybox', type: 'file', mode: 0o755, data: readFileSync(busyboxPath) },
    ...applets(busyboxPath).map((a): TarEntry => ({ name: `bin/${a}`, type: 'symlink', linkname: 'busybox' })),
    { name: 'etc/', type: 'dir' },
    { name: 'etc/passwd', type: 'file', data: Buffer.from('root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n') },
    { name: 'etc/group', type: 'file', data: Buffer.from('root:x:0:\nnogroup:x:65534:\n') },
    ...nssEntries(),
    { name: 'root/', type: 'dir', mode: 0o700 },
    { name: 'tmp/', type: 'dir', mode: 0o1777 },
    { name: 'var/', type: 'dir' },
    { name: 'var/www/', type: 'dir' },
    { name: 'usr/', type: 'dir' },
    { name: 'usr/bin/', type: 'dir' },
    { name: 'usr/bin/env', type: 'symlink', linkname: '../../bin/busybox' },
  ];
  return createTar(entries);
}

interface Blob { readonly digest: string; readonly data: Buffer }
const blob = (data: Buffer): Blob => ({ digest: `sha256:${sha256(data)}`, data });

/** The OCI image-layout tar with both images. */
export function buildBusyboxImageTar(busyboxPath = DEFAULT_BUSYBOX_PATH): Buffer {
  const layer = blob(buildBusyboxLayer(busyboxPath));
  const blobs: Blob[] = [layer];
  const manifests: object[] = [];
  const images: { name: string; config: Record<string, unknown> }[] = [
    { name: PAUSE_IMAGE, config: { Entrypoint: ['sleep', '2147483647'], Env: ['PATH=/bin:/usr/bin'], WorkingDir: '/' } },
    { name: BUSYBOX_IMAGE, config: { Cmd: ['sh'], Env: ['PATH=/bin:/usr/bin'], WorkingDir: '/' } },
  ];
  for (const img of images) {
    const config = blob(Buffer.from(JSON.stringify({
      architecture: ociArch(), os: 'linux', config: img.config,
      rootfs: { type: 'layers', diff_ids: [layer.digest] },
      created: '1970-01-01T00:00:00Z',
    })));
    const manifest = blob(Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: config.data.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layer.digest, size: layer.data.length }],
    })));
    blobs.push(config, manifest);
    const tag = img.name.slice(img.name.lastIndexOf(':') + 1);
    manifests.push({
      mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: manifest.digest, size: manifest.data.length,
      annotations: { 'io.containerd.image.name': img.name, 'org.opencontainers.image.ref.name': tag },
    });
  }
  const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests }));
  const entries: TarEntry[] = [
    { name: 'oci-layout', type: 'file', data: Buffer.from('{"imageLayoutVersion":"1.0.0"}') },
    { name: 'index.json', type: 'file', data: index },
    { name: 'blobs/', type: 'dir' },
    { name: 'blobs/sha256/', type: 'dir' },
  ];
  const seen = new Set<string>();
  for (const b of blobs) {
    if (seen.has(b.digest)) continue;
    seen.add(b.digest);
    entries.push({ name: `blobs/sha256/${b.digest.slice('sha256:'.length)}`, type: 'file', data: b.data });
  }
  return createTar(entries);
}

export function busyboxAvailable(busyboxPath = DEFAULT_BUSYBOX_PATH): boolean {
  return existsSync(busyboxPath);
}

/** Writes the image tar to `path` and returns the names of the images it holds. */
export async function writeBusyboxImageTar(path: string, busyboxPath = DEFAULT_BUSYBOX_PATH): Promise<string[]> {
  await writeFile(path, buildBusyboxImageTar(busyboxPath));
  return [PAUSE_IMAGE, BUSYBOX_IMAGE];
}
