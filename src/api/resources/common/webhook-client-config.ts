/**
 * Validation of a webhook's clientConfig (admissionregistration.k8s.io/v1 WebhookClientConfig,
 * and a CRD's conversion webhook, which Kubernetes checks with the same helpers): exactly one
 * of `url` and `service`, with Kubernetes' rules and messages for each. The URL is split the
 * way Go's net/url splits it, because Kubernetes' checks (and their wording) follow
 * what that parser finds: a value WHATWG's URL refuses, such as 'example.com', is for Go a URL
 * with a path and no scheme or host, and draws the scheme and host messages.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { rec, str } from './table-util.js';
import { dns1123Subdomain, isObject } from './validation.js';

const URL_FORM = '; desired format: https://host[/path]';

interface GoUrl { scheme: string; user?: string; host: string; rawQuery: string; fragment: string }

/** ASCII characters Go accepts unescaped in a host (net/url shouldEscape for encodeHost). */
const HOST_CHAR = /[A-Za-z0-9\-_.~!$&'()*+,;=:[\]<>"]/;

/** Checks %XX escapes as Go's unescape does; returns Go's complaint or undefined. */
function badEscape(s: string): string | undefined {
  for (let i = s.indexOf('%'); i >= 0; i = s.indexOf('%', i + 1)) {
    if (!/^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) return `invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}`;
  }
  return undefined;
}

function parseHost(host: string): string | undefined {
  let port = '';
  if (host.startsWith('[')) {
    const end = host.lastIndexOf(']');
    if (end < 0) return "missing ']' in host";
    port = host.slice(end + 1);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0) port = host.slice(colon);
  }
  if (port !== '' && !/^:[0-9]*$/.test(port)) return `invalid port ${JSON.stringify(port)} after host`;
  const escape = badEscape(host);
  if (escape) return escape;
  for (const c of host) if (c !== '%' && c < '\x80' && !HOST_CHAR.test(c)) return `invalid character ${JSON.stringify(c)} in host name`;
  return undefined;
}

/** Go's url.Parse, reduced to the parts Kubernetes checks; a string is Go's error text. */
function parseGoUrl(raw: string): GoUrl | string {
  const fail = (why: string): string => `parse ${JSON.stringify(raw)}: ${why}`;
  const hash = raw.indexOf('#');
  let rest = hash >= 0 ? raw.slice(0, hash) : raw;
  const fragment = hash >= 0 ? raw.slice(hash + 1) : '';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(rest)) return fail('net/url: invalid control character in URL');
  let scheme = '';
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(rest);
  if (rest.startsWith(':')) return fail('missing protocol scheme');
  if (m) { scheme = m[1]!.toLowerCase(); rest = rest.slice(m[0].length); }
  let rawQuery = '';
  if (rest.endsWith('?') && rest.split('?').length === 2) rest = rest.slice(0, -1);
  else {
    const q = rest.indexOf('?');
    if (q >= 0) { rawQuery = rest.slice(q + 1); rest = rest.slice(0, q); }
  }
  const u: GoUrl = { scheme, host: '', rawQuery, fragment };
  if (!rest.startsWith('/')) {
    // With a scheme the rest is opaque ('https:host'); without, a colon before any '/' is refused.
    if (!scheme && rest.split('/')[0]!.includes(':')) return fail('first path segment in URL cannot contain colon');
  } else if (rest.startsWith('//') && (scheme || !rest.startsWith('///'))) {
    const slash = rest.indexOf('/', 2);
    const authority = slash >= 0 ? rest.slice(2, slash) : rest.slice(2);
    const at = authority.lastIndexOf('@');
    const host = at >= 0 ? authority.slice(at + 1) : authority;
    const hostError = parseHost(host);
    if (hostError) return fail(hostError);
    if (at >= 0) u.user = authority.slice(0, at);
    u.host = host;
  }
  const fragmentError = badEscape(fragment);
  if (fragmentError) return fail(fragmentError);
  return u;
}

function validateUrl(url: string, at: string, errs: FieldError[]): void {
  const u = parseGoUrl(url);
  if (typeof u === 'string') { errs.push(fieldErrors.required(at, `url must be a valid URL: ${u}${URL_FORM}`)); return; }
  if (u.scheme !== 'https') errs.push(fieldErrors.invalid(at, u.scheme, `'https' is the only allowed URL scheme${URL_FORM}`));
  if (!u.host) errs.push(fieldErrors.invalid(at, u.host, `host must be provided${URL_FORM}`));
  if (u.user !== undefined) errs.push(fieldErrors.invalid(at, u.user, 'user information is not permitted in the URL'));
  if (u.fragment) errs.push(fieldErrors.invalid(at, u.fragment, 'fragments are not permitted in the URL'));
  if (u.rawQuery) errs.push(fieldErrors.invalid(at, u.rawQuery, 'query parameters are not permitted in the URL'));
}

function validateServicePath(path: string, at: string, errs: FieldError[]): void {
  if (path === '' || path === '/') return;
  if (path === '//') { errs.push(fieldErrors.invalid(at, path, 'segment[0] may not be empty')); return; }
  if (!path.startsWith('/')) errs.push(fieldErrors.invalid(at, path, "must start with a '/'"));
  // Kubernetes drops the first character whatever it is, and one trailing '/'.
  let check = path.slice(1);
  if (check.endsWith('/')) check = check.slice(0, -1);
  check.split('/').forEach((segment, i) => {
    if (!segment) { errs.push(fieldErrors.invalid(at, path, `segment[${i}] may not be empty`)); return; }
    for (const p of dns1123Subdomain(segment)) errs.push(fieldErrors.invalid(at, path, `segment[${i}]: ${p}`));
  });
}

function validateService(service: Record<string, unknown>, at: string, errs: FieldError[]): void {
  if (!str(service.name)) errs.push(fieldErrors.required(`${at}.name`, 'service name is required'));
  if (!str(service.namespace)) errs.push(fieldErrors.required(`${at}.namespace`, 'service namespace is required'));
  const port = service.port;
  if (port !== undefined && port !== null && (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535)) {
    errs.push(fieldErrors.invalid(`${at}.port`, port, 'port is not valid: must be between 1 and 65535, inclusive'));
  }
  if (typeof service.path === 'string') validateServicePath(service.path, `${at}.path`, errs);
}

/** caBundle is bytes: base64 text in JSON, which Kubernetes' decoder would refuse if malformed. */
function validateCaBundle(ca: unknown, at: string, errs: FieldError[]): void {
  if (typeof ca !== 'string' || ca === '') return;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(ca) || ca.length % 4 !== 0) errs.push(fieldErrors.invalid(at, ca, 'must be base64-encoded bytes'));
}

/** Validates `<at>` (webhooks[i].clientConfig, spec.conversion.webhook.clientConfig). */
export function validateClientConfig(cc: unknown, at: string, errs: FieldError[]): void {
  const c = rec(cc);
  const hasUrl = c.url !== undefined && c.url !== null;
  const hasService = c.service !== undefined && c.service !== null;
  if (hasUrl === hasService) errs.push(fieldErrors.required(at, 'exactly one of url or service is required'));
  else if (hasUrl) validateUrl(str(c.url), `${at}.url`, errs);
  else if (isObject(c.service)) validateService(c.service, `${at}.service`, errs);
  validateCaBundle(c.caBundle, `${at}.caBundle`, errs);
}
