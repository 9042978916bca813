/** Test helper: the state object in which Node 20 keeps an HTTP/2 session's streams. */
import type { Http2Session } from 'node:http2';

export function sessionState(session: Http2Session): { streams: unknown; pendingStreams: unknown } {
  const sym = Object.getOwnPropertySymbols(session).find((s) => s.description === 'state')!;
  return (session as unknown as Record<symbol, { streams: unknown; pendingStreams: unknown }>)[sym]!;
}
