/**
 * `Authorization: Bearer <token>` checked against every token authenticator in order. A bearer
 * token nobody recognises is an error (401), not "no credentials": a client that sends a token
 * expects it to count.
 */
import { NOT_APPLICABLE, type AuthRequest, type AuthResult, type Authenticator, type TokenAuthenticator } from './authenticator.js';

export function bearerToken(headers: AuthRequest['headers']): string | undefined {
  const raw = headers['authorization'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return undefined;
  const parts = value.trim().split(' ');
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1] ?? '';
  return token === '' ? undefined : token;
}

export class BearerTokenAuthenticator implements Authenticator {
  readonly name = 'bearer-token';
  constructor(private readonly tokens: TokenAuthenticator[]) {}

  async authenticate(req: AuthRequest): Promise<AuthResult> {
    const token = bearerToken(req.headers);
    if (token === undefined) return NOT_APPLICABLE;
    for (const t of this.tokens) {
      const user = await t.authenticateToken(token);
      if (user) return { ok: true, user, method: t.name };
    }
    return { ok: false, error: 'invalid bearer token' };
  }
}
