/**
 * Detached JWS signatures of the cluster-info kubeconfig (RFC 7515 appendix F), as Kubernetes'
 * cluster-bootstrap/token/jws computes them: HS256, protected header {"alg":"HS256","kid":<id>},
 * the key being the token secret zero-padded to 32 bytes, and the payload part left out of the
 * compact form (`<header>..<signature>`). A joining node that knows the token recomputes it to
 * trust the cluster-info it fetched over an unverified connection.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

export function computeDetachedSignature(content: string, tokenId: string, tokenSecret: string): string {
  let key = Buffer.from(tokenSecret, 'utf8');
  if (key.length < 32) key = Buffer.concat([key, Buffer.alloc(32 - key.length)]);
  // Key order as go-jose writes it (its header map is marshalled with sorted keys).
  const header = b64url(JSON.stringify({ alg: 'HS256', kid: tokenId }));
  const signature = createHmac('sha256', key).update(`${header}.${b64url(content)}`).digest();
  return `${header}..${b64url(signature)}`;
}

/** Whether `detached` is the signature of `content` with this token (compared in constant time). */
export function detachedSignatureValid(detached: string, content: string, tokenId: string, tokenSecret: string): boolean {
  const want = Buffer.from(computeDetachedSignature(content, tokenId, tokenSecret));
  const got = Buffer.from(detached);
  return got.length === want.length && timingSafeEqual(got, want);
}
