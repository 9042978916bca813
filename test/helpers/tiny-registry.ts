/**
 * A tiny OCI distribution registry on loopback for image tests: it serves images made from the
 * offline busybox layer (oci-image.ts) by name, can stall a blob (headers and half the body,
 * then nothing: a pull that makes no progress), and can require HTTP Basic credentials for
 * repositories under `private/`, recording the Authorization headers it saw.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { buildBusyboxLayer, createTar } from './oci-image.js';

const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export interface TinyRegistry {
  /** host:port, e.g. 127.0.0.1:41234 */
  readonly host: string;
  /** Authorization headers received for private repositories. */
  readonly authHeaders: string[];
  /** Adds an image `<name>:<tag>`; its config differs by name so every image has its own id. */
  addImage(name: string, tag: string): void;
  /** Adds `<name>:<tag>` with a layer of its own (2 MiB of random bytes) whose download sends half and stalls. */
  addStalledImage(name: string, tag: string): void;
  stop(): Promise<void>;
}

export async function startTinyRegistry(opts: { user?: string; password?: string } = {}): Promise<TinyRegistry> {
  const layer = buildBusyboxLayer();
  const layerDigest = sha(layer);
  const blobs = new Map<string, Buffer>([[layerDigest, layer]]);
  const manifests = new Map<string, Buffer>();
  const stalled = new Set<string>();
  const authHeaders: string[] = [];
  const sockets = new Set<Socket>();
  const want = opts.user ? `Basic ${Buffer.from(`${opts.user}:${opts.password ?? ''}`).toString('base64')}` : '';

  const send = (res: ServerResponse, status: number, body: Buffer, headers: Record<string, string>, head: boolean): void => {
    res.writeHead(status, { 'Content-Length': String(body.length), ...headers });
    res.end(head ? undefined : body);
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const head = req.method === 'HEAD';
    if (url.pathname === '/v2/' || url.pathname === '/v2') { send(res, 200, Buffer.from('{}'), { 'Content-Type': 'application/json', 'Docker-Distribution-API-Version': 'registry/2.0' }, head); return; }
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(url.pathname);
    if (!m) { send(res, 404, Buffer.from('{"errors":[{"code":"NAME_UNKNOWN"}]}'), { 'Content-Type': 'application/json' }, head); return; }
    const [, name, kind, ref] = m as unknown as [string, string, string, string];
    if (name.startsWith('private/')) {
      const got = req.headers.authorization ?? '';
      if (got) authHeaders.push(got);
      if (got !== want) { send(res, 401, Buffer.from('{"errors":[{"code":"UNAUTHORIZED"}]}'), { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Basic realm="tiny"' }, head); return; }
    }
    if (kind === 'manifests') {
      const body = manifests.get(`${name}:${ref}`) ?? [...manifests.entries()].find(([k, v]) => k.startsWith(`${name}:`) && sha(v) === ref)?.[1];
      if (!body) { send(res, 404, Buffer.from('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}'), { 'Content-Type': 'application/json' }, head); return; }
      send(res, 200, body, { 'Content-Type': 'application/vnd.oci.image.manifest.v1+json', 'Docker-Content-Digest': sha(body) }, head);
      return;
    }
    const blob = blobs.get(ref);
    if (!blob) { send(res, 404, Buffer.from('{"errors":[{"code":"BLOB_UNKNOWN"}]}'), { 'Content-Type': 'application/json' }, head); return; }
    if (stalled.has(ref) && !head) {
      res.writeHead(200, { 'Content-Length': String(blob.length), 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': ref });
      res.write(blob.subarray(0, Math.floor(blob.length / 2)));
      return; // never ends: the pull makes no more progress
    }
    send(res, 200, blob, { 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': ref }, head);
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    authHeaders,
    addImage(name, tag) { addImage(name, tag, layerDigest, layer.length); },
    addStalledImage(name, tag) {
      const own = createTar([{ name: 'junk', type: 'file', data: randomBytes(2 * 2 ** 20) }]);
      blobs.set(sha(own), own);
      stalled.add(sha(own));
      addImage(name, tag, sha(own), own.length);
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  function addImage(name: string, tag: string, digest: string, size: number): void {
    const config = Buffer.from(JSON.stringify({
      architecture: process.arch === 'x64' ? 'amd64' : process.arch, os: 'linux',
      config: { Cmd: ['sh'], Env: ['PATH=/bin:/usr/bin'], Labels: { name } },
      rootfs: { type: 'layers', diff_ids: [digest] }, created: '1970-01-01T00:00:00Z',
    }));
    blobs.set(sha(config), config);
    manifests.set(`${name}:${tag}`, Buffer.from(JSON.stringify({
      schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest, size }],
    })));
  }
}
