/**
 * HTTP basic authentication (--basic-auth-file), as Kubernetes' password file authenticator:
 * CSV lines `password,user,uid[,"group1,group2"]` (further columns ignored), read once at
 * start-up; a user name given twice keeps the later line (with a warning). A request with
 * `Authorization: Basic` and a wrong or unknown user/password fails (401, whatever else it
 * carries); one without the header is not this authenticator's.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { NOT_APPLICABLE, type AuthRequest, type AuthResult, type Authenticator } from '../authenticator.js';
import { parseCsvLine } from '../token-file.js';
import type { UserInfo } from '../user.js';

interface Entry { user: UserInfo; passwordHash: Buffer }

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** user and password of an `Authorization: Basic` header; undefined without one (or malformed, as Go's BasicAuth). */
export function basicCredentials(headers: AuthRequest['headers']): { user: string; password: string } | undefined {
  const raw = headers['authorization'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value || value.length < 6 || value.slice(0, 6).toLowerCase() !== 'basic ') return undefined;
  const b64 = value.slice(6);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return undefined;
  const text = Buffer.from(b64, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

export class BasicAuthAuthenticator implements Authenticator {
  readonly name = 'basic-auth';
  private constructor(private readonly users: Map<string, Entry>) {}

  static fromText(text: string, file = 'password file'): { authenticator: BasicAuthAuthenticator; warnings: string[] } {
    const users = new Map<string, Entry>();
    const warnings: string[] = [];
    text.split(/\r?\n/).forEach((line, idx) => {
      if (line.trim() === '') return;
      let rec: string[];
      try {
        rec = parseCsvLine(line);
      } catch (e) {
        throw new Error(`password file '${file}' line ${idx + 1}: ${(e as Error).message}`);
      }
      if (rec.length < 3) {
        throw new Error(`password file '${file}' must have at least 3 columns (password, user name, user uid), found ${rec.length}`);
      }
      const [password = '', name = '', uid = '', groups = ''] = rec;
      if (users.has(name)) warnings.push(`duplicate username '${name}' has been found in password file '${file}', line ${idx + 1}: the later line wins`);
      const user: UserInfo = { name, uid, groups: [] };
      if (rec.length >= 4) user.groups = groups.split(',').map((g) => g.trim()).filter((g) => g !== '');
      Object.freeze(user.groups);
      users.set(name, { user: Object.freeze(user), passwordHash: digest(password) });
    });
    return { authenticator: new BasicAuthAuthenticator(users), warnings };
  }

  static async load(path: string): Promise<{ authenticator: BasicAuthAuthenticator; warnings: string[] }> {
    return BasicAuthAuthenticator.fromText(await readFile(path, 'utf8'), path);
  }

  async authenticate(req: AuthRequest): Promise<AuthResult> {
    const creds = basicCredentials(req.headers);
    if (!creds) return NOT_APPLICABLE;
    const entry = this.users.get(creds.user);
    // Compared as fixed-length digests in constant time: the answer's timing says nothing of the password.
    const given = digest(creds.password);
    if (!entry || !timingSafeEqual(given, entry.passwordHash)) {
      return { ok: false, error: 'invalid username/password combination' };
    }
    return { ok: true, method: this.name, user: entry.user };
  }
}
