/**
 * Request-header (front proxy) authentication, --requestheader-*: the user named by the first
 * --requestheader-username-headers header with a value, groups from every value of every
 * --requestheader-group-headers header, extra attributes from headers starting with a
 * --requestheader-extra-headers-prefix (the rest of the name, lower-cased and %-decoded, is
 * the key). Trusted only on a connection whose client certificate chains to
 * --requestheader-client-ca-file and, when --requestheader-allowed-names is set, whose
 * CommonName is listed. A certificate that fails those checks makes this authenticator fail
 * (an error, as Kubernetes' verifier): the headers are not read, the next authenticator decides.
 * Once read, the identity headers are removed so nothing downstream (a proxy) passes them on.
 */
import type { PeerCertificate } from 'node:tls';
import { NOT_APPLICABLE, type AuthRequest, type AuthResult, type Authenticator } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import { hasCertificate, type CaBundle } from './ca-bundle.js';

export interface RequestHeaderConfig {
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
  allowedNames: string[];
}

/** The headers Kubernetes removes from every authenticated request, configured or not. */
export const STANDARD_REQUEST_HEADERS: RequestHeaderConfig = Object.freeze({
  usernameHeaders: ['X-Remote-User'], groupHeaders: ['X-Remote-Group'], extraHeaderPrefixes: ['X-Remote-Extra-'], allowedNames: [],
});

/** Header names trimmed; an empty one is refused (Kubernetes: `empty header "..."`). */
export function trimHeaderNames(names: readonly string[]): string[] {
  return names.map((n) => {
    const t = n.trim();
    if (!t) throw new Error(`empty header ${JSON.stringify(n)}`);
    return t;
  });
}

type Headers = AuthRequest['headers'];

/** Removes the identity headers of `configs` from `headers` (names lower-case, as Node keeps them). */
export function identityHeaderRemover(configs: readonly RequestHeaderConfig[]): (headers: Headers) => void {
  const names = new Set<string>();
  const prefixes = new Set<string>();
  for (const c of configs) {
    for (const n of [...c.usernameHeaders, ...c.groupHeaders]) names.add(n.toLowerCase());
    for (const p of c.extraHeaderPrefixes) prefixes.add(p.toLowerCase());
  }
  const nameList = [...names];
  const prefixList = [...prefixes];
  return (headers) => {
    for (const n of nameList) if (headers[n] !== undefined) delete headers[n];
    if (!prefixList.length) return;
    for (const k in headers) {
      for (const p of prefixList) if (k.startsWith(p)) { delete headers[k]; break; }
    }
  };
}

export class RequestHeaderAuthenticator implements Authenticator {
  readonly name = 'requestheader';
  private readonly usernames: string[];
  private readonly groups: string[];
  private readonly prefixes: string[];
  private readonly allowed: ReadonlySet<string>;
  private readonly clear: (headers: Headers) => void;

  constructor(private readonly bundle: CaBundle, config: RequestHeaderConfig) {
    this.usernames = config.usernameHeaders.map((h) => h.toLowerCase());
    this.groups = config.groupHeaders.map((h) => h.toLowerCase());
    this.prefixes = config.extraHeaderPrefixes.map((h) => h.toLowerCase());
    this.allowed = new Set(config.allowedNames);
    this.clear = identityHeaderRemover([config]);
  }

  /** Whether this connection's certificate is a trusted proxy's: its requests may each name another user. */
  trustsConnection(req: AuthRequest): boolean {
    return this.refusal(req) === undefined;
  }

  async authenticate(req: AuthRequest): Promise<AuthResult> {
    if (!hasCertificate(req.tls?.peerCertificate)) return NOT_APPLICABLE;
    const why = this.refusal(req);
    if (why) return { ok: false, error: `requestheader: ${why}` };
    const name = this.firstValue(req.headers);
    if (!name) return NOT_APPLICABLE;
    const user: UserInfo = { name, groups: this.allValues(req, this.groups) };
    const extra = this.extra(req);
    if (extra) user.extra = extra;
    this.clear(req.headers);
    return { ok: true, method: this.name, user };
  }

  private refusal(req: AuthRequest): string | undefined {
    const tls = req.tls;
    const cert = tls?.peerCertificate;
    if (!tls || !cert || !hasCertificate(cert)) return 'no client certificate';
    const why = this.bundle.verify(tls);
    if (why) return why;
    if (this.allowed.size) {
      const cn = commonName(cert);
      if (!this.allowed.has(cn)) return `x509: subject with cn=${cn} is not in the allowed list`;
    }
    return undefined;
  }

  private firstValue(headers: Headers): string | undefined {
    for (const h of this.usernames) {
      const v = headers[h];
      const first = Array.isArray(v) ? v[0] : v;
      if (first) return first;
    }
    return undefined;
  }

  /** Every non-empty value of the headers, repeated headers kept apart (from the raw headers). */
  private allValues(req: AuthRequest, names: readonly string[]): string[] {
    const out: string[] = [];
    for (const n of names) {
      for (const v of valuesOf(req, n)) if (v) out.push(v);
    }
    return out;
  }

  private extra(req: AuthRequest): Record<string, string[]> | undefined {
    if (!this.prefixes.length) return undefined;
    let out: Record<string, string[]> | undefined;
    for (const p of this.prefixes) {
      for (const k of Object.keys(req.headers)) {
        if (!k.startsWith(p) || k.length === p.length) continue;
        const key = decodeKey(k.slice(p.length));
        (out ??= {})[key] = [...(out[key] ?? []), ...valuesOf(req, k)];
      }
    }
    return out;
  }
}

function valuesOf(req: AuthRequest, lowerName: string): string[] {
  const raw = req.rawHeaders;
  if (raw && raw.length) {
    const out: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === lowerName) out.push(raw[i + 1]!);
    return out;
  }
  const v = req.headers[lowerName];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function decodeKey(k: string): string {
  try { return decodeURIComponent(k); } catch { return k; }
}

function commonName(c: PeerCertificate): string {
  const cn = c.subject?.CN as string | string[] | undefined;
  return (Array.isArray(cn) ? cn[0] : cn) ?? '';
}
