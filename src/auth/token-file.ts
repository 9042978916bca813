/**
 * Static token file (--token-auth-file): CSV lines `token,user,uid[,"group1,group2"]`; further
 * columns are ignored. Blank lines are skipped; an empty token is skipped; a repeated token keeps
 * the later line. Read once at start-up.
 */
import { readFile } from 'node:fs/promises';
import type { TokenAuthenticator } from './authenticator.js';
import type { UserInfo } from './user.js';

/** Parses one CSV record (RFC 4180 quoting, leading spaces trimmed as Go's csv.TrimLeadingSpace). */
export function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw new Error('unterminated quoted field');
        const ch = line[i];
        if (ch === '"') {
          if (line[i + 1] === '"') { field += '"'; i += 2; continue; }
          i++;
          break;
        }
        field += ch;
        i++;
      }
      if (i < line.length && line[i] !== ',') throw new Error(`extraneous text after quoted field`);
    } else {
      const end = line.indexOf(',', i);
      field = end < 0 ? line.slice(i) : line.slice(i, end);
      if (field.includes('"')) throw new Error('bare " in non-quoted field');
      i = end < 0 ? line.length : end;
    }
    out.push(field);
    if (i >= line.length) return out;
    i++; // the comma
  }
}

export class TokenFileAuthenticator implements TokenAuthenticator {
  readonly name = 'token-file';
  private constructor(private readonly tokens: Map<string, UserInfo>) {}

  static fromText(text: string, file = 'token file'): { authenticator: TokenFileAuthenticator; warnings: string[] } {
    const tokens = new Map<string, UserInfo>();
    const warnings: string[] = [];
    const lines = text.split(/\r?\n/);
    lines.forEach((line, idx) => {
      if (line.trim() === '') return;
      let rec: string[];
      try {
        rec = parseCsvLine(line);
      } catch (e) {
        throw new Error(`${file} line ${idx + 1}: ${(e as Error).message}`);
      }
      if (rec.length < 3) {
        throw new Error(`${file} line ${idx + 1}: must have at least 3 columns (token, user name, user uid), found ${rec.length}`);
      }
      const [token = '', name = '', uid = '', groups = ''] = rec;
      if (token === '') { warnings.push(`${file} line ${idx + 1}: empty token, skipped`); return; }
      if (tokens.has(token)) warnings.push(`${file} line ${idx + 1}: duplicate token, the later line wins`);
      const user: UserInfo = { name, uid, groups: [] };
      if (rec.length >= 4) user.groups = groups.split(',').map((g) => g.trim()).filter((g) => g !== '');
      // Frozen: every request with this token shares the one user.
      Object.freeze(user.groups);
      tokens.set(token, Object.freeze(user));
    });
    return { authenticator: new TokenFileAuthenticator(tokens), warnings };
  }

  static async load(path: string): Promise<{ authenticator: TokenFileAuthenticator; warnings: string[] }> {
    return TokenFileAuthenticator.fromText(await readFile(path, 'utf8'), path);
  }

  get size(): number { return this.tokens.size; }

  /** The token's user, frozen and shared by every request that presents the token. */
  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    return this.tokens.get(token);
  }
}
