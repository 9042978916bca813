/**
 * /api-docs-ui/ (--enable-api-docs-ui): interactive API documentation built in the browser from
 * this server's /openapi/v3 by Swagger UI (the swagger-ui-dist package, served from its files
 * here: no internet needed). The page and its assets pass the filter chain like every path, so
 * a user needs `get` on the non-resource URLs /api-docs-ui and /api-docs-ui/* (cluster-admin has
 * them); the documents it loads and the requests it tries need their own permissions. How the
 * page authenticates: api-docs-ui-page.ts.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ApiError, errors } from '../../../api/meta/status.js';
import { API_DOCS_INDEX_HTML, API_DOCS_INITIALIZER_JS, API_DOCS_PAGE_CSS } from './api-docs-ui-page.js';

interface DocsResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(): unknown;
  end(chunk: string | Uint8Array): unknown;
}

const PREFIX = '/api-docs-ui/';

/** The package's files the page uses: a fixed list, so no request names any other file. */
const PACKAGE_FILES: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const OURS: Readonly<Record<string, { body: string; type: string }>> = {
  '': { body: API_DOCS_INDEX_HTML, type: 'text/html; charset=utf-8' },
  'index.html': { body: API_DOCS_INDEX_HTML, type: 'text/html; charset=utf-8' },
  'initializer.js': { body: API_DOCS_INITIALIZER_JS, type: 'text/javascript; charset=utf-8' },
  'page.css': { body: API_DOCS_PAGE_CSS, type: 'text/css; charset=utf-8' },
};

/**
 * Scripts only from this origin and no inline script; Swagger UI injects styles and shows
 * data: images; fetches stay on this server.
 */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export function isApiDocsPath(path: string): boolean {
  return path === '/api-docs-ui' || path.startsWith(PREFIX);
}

let packageDir: string | undefined;
/** swagger-ui-dist's directory, found by Node's resolution from here. */
function swaggerUiDir(): string {
  packageDir ??= dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  return packageDir;
}

const cache = new Map<string, Buffer>();

async function packageFile(name: string): Promise<Buffer> {
  let b = cache.get(name);
  if (!b) {
    b = await readFile(join(swaggerUiDir(), name));
    cache.set(name, b);
  }
  return b;
}

export async function serveApiDocs(method: string, path: string, res: DocsResponse): Promise<void> {
  if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed(method, path);
  if (path === '/api-docs-ui') {
    res.statusCode = 301;
    res.setHeader('Location', PREFIX);
    res.setHeader('Content-Length', '0');
    res.end();
    return;
  }
  const name = path.slice(PREFIX.length);
  let body: string | Buffer;
  let type: string;
  const ours = OURS[name];
  if (ours) {
    ({ body, type } = ours);
  } else if (Object.hasOwn(PACKAGE_FILES, name)) {
    type = PACKAGE_FILES[name]!;
    try {
      body = await packageFile(name);
    } catch (e) {
      throw errors.internal(`the API docs UI package (swagger-ui-dist) is not installed: ${(e as Error).message}`, e);
    }
  } else {
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', type);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  // Private: the page is behind authorization; short-lived, so an upgrade shows soon.
  res.setHeader('Cache-Control', 'private, max-age=300');
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  if (method === 'HEAD') res.end(); else res.end(body);
}
