/**
 * /logs/ (--enable-logs-handler): the server's log directory (--logs-dir, default /var/log as
 * Kubernetes serves) as Go's file server shows it — a `<pre>` listing of links, and each file as
 * plain text. Reached only through the filter chain, so only users authorized for `get` on the
 * non-resource URL (cluster-admin in the default RBAC policy) see it.
 *
 * Nothing outside the directory is reachable: the chain's URL parser already resolves `..` and
 * `%2e%2e` segments (the path then no longer starts with /logs/); here every segment is decoded
 * once and refused when it is `.`, `..`, empty, or holds `/`, `\` or NUL (an encoded `%2f`,
 * double encoding decodes to a literal name that does not exist); the real path (symlinks
 * resolved) must lie inside the real directory, else 403; only directories and regular files
 * are served, and a file is opened by its resolved path without following a last symlink.
 * Refused names answer 404, as Kubernetes answers names that are too long.
 */
import { constants, type Dirent } from 'node:fs';
import { open, readdir, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { ApiError, errors } from '../../../api/meta/status.js';
import type { StreamingResponse } from '../../../util/http-serving.js';


const PREFIX = '/logs/';
const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_BYTES = 4096;
const CHUNK = 64 * 1024;

/** True for the paths /logs owns. */
export function isLogsPath(path: string): boolean {
  return path === '/logs' || path.startsWith(PREFIX);
}

function notFound(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** The decoded segments below /logs/, or undefined when one is refused. A trailing '' marks a directory request. */
export function logPathSegments(path: string): string[] | undefined {
  const raw = path.slice(PREFIX.length).split('/');
  const out: string[] = [];
  let bytes = 0;
  for (let i = 0; i < raw.length; i++) {
    const r = raw[i]!;
    if (r === '') {
      if (i === raw.length - 1) { out.push(''); continue; }
      return undefined;
    }
    let s: string;
    try { s = decodeURIComponent(r); } catch { return undefined; }
    if (s === '.' || s === '..' || /[/\\\0]/.test(s)) return undefined;
    const n = Buffer.byteLength(s);
    bytes += n + 1;
    if (n > MAX_SEGMENT_BYTES || bytes > MAX_PATH_BYTES) return undefined;
    out.push(s);
  }
  return out;
}

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function headers(res: StreamingResponse, type: string): void {
  res.setHeader('Content-Type', type);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // A log line is attacker-influenced text: never let it run as a page on the API server's origin.
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  res.setHeader('Cache-Control', 'no-cache, private');
}

/** Serves one request for a path isLogsPath accepted; throws ApiError for the chain to write. */
export async function serveLogs(method: string, path: string, res: StreamingResponse, root: string, signal: AbortSignal): Promise<void> {
  if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed(method, path);
  if (path === '/logs') { redirect(res, PREFIX); return; }
  const segs = logPathSegments(path);
  if (!segs) throw notFound();
  const wantsDir = segs[segs.length - 1] === '';
  const names = wantsDir ? segs.slice(0, -1) : segs;
  let realRoot: string;
  let real: string;
  try {
    realRoot = await realpath(root);
    real = await realpath(join(realRoot, ...names));
  } catch {
    throw notFound();
  }
  if (!inside(realRoot, real)) throw new ApiError(403, 'Forbidden', `${path} leads outside the log directory`, {});
  // O_NOFOLLOW: the resolved path's last part was no symlink a moment ago and must not be one now;
  // O_NONBLOCK: a FIFO someone left there must not hang the request.
  let fh;
  try {
    fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    throw notFound();
  }
  try {
    const st = await fh.stat();
    if (st.isDirectory()) {
      if (!wantsDir) { redirect(res, `${path}/`); return; }
      const entries = await readdir(real, { withFileTypes: true });
      sendListing(res, method, entries);
      return;
    }
    if (!st.isFile() || wantsDir) throw notFound();
    headers(res, 'text/plain; charset=utf-8');
    // A log grows while it is read: send the size it had now, so Content-Length stays true.
    res.setHeader('Content-Length', String(st.size));
    res.statusCode = 200;
    if (method === 'HEAD' || st.size === 0) { res.end(); return; }
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, st.size));
    let pos = 0;
    while (pos < st.size && !signal.aborted && !res.writableEnded) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, st.size - pos), pos);
      if (bytesRead === 0) break; // truncated meanwhile: the client sees a short body
      pos += bytesRead;
      const chunk = Buffer.from(buf.subarray(0, bytesRead));
      await new Promise<void>((resolve, reject) => { res.write(chunk, (e) => (e ? reject(e) : resolve())); });
    }
    if (!res.writableEnded) res.end();
  } finally {
    await fh.close();
  }
}

function redirect(res: StreamingResponse, location: string): void {
  res.statusCode = 301;
  res.setHeader('Location', location);
  res.setHeader('Content-Length', '0');
  res.end();
}

/** Go's http.FileServer listing: sorted names, directories with a trailing slash. */
function sendListing(res: StreamingResponse, method: string, entries: Dirent[]): void {
  const rows = entries
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort()
    .map((n) => `<a href="${escapeHtml(encodeURIComponent(n.replace(/\/$/, '')) + (n.endsWith('/') ? '/' : ''))}">${escapeHtml(n)}</a>`);
  const body = `<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n${rows.join('\n')}${rows.length ? '\n' : ''}</pre>\n`;
  headers(res, 'text/html; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  res.statusCode = 200;
  if (method === 'HEAD') res.end(); else res.end(body);
}
