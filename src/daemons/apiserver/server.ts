/**
 * The secure listener: TLS with HTTP/2 and HTTP/1.1 on one port (kubectl speaks HTTP/2, but its
 * exec/attach/port-forward upgrades arrive as HTTP/1.1). Client certificates are requested but
 * never required at the handshake: authentication decides per request.
 *
 * Shutdown (`close`): stop accepting, abort every request's signal (watches end), send GOAWAY to
 * HTTP/2 sessions, then destroy whatever is still open after a grace period.
 */
import { readFile } from 'node:fs/promises';
import type * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { adoptStreamTable } from '../../util/h2-stream-table.js';
import type { RequestChain } from './chain.js';
import { H2Request } from './h2-request.js';
import { H2Response } from './h2-response.js';
import { StartupError, type ServingOptions } from './serving-options.js';
import { buildSniMap, sniCallback, type SniEntry } from '../../util/tls-sni.js';
import type { ServingPair } from './tls/serving-certs.js';
import { cipherList, minTlsVersion } from '../../util/tls-options.js';

/** Streams per HTTP/2 connection when --http2-max-streams-per-connection is 0 (Kubernetes' default). */
export const DEFAULT_HTTP2_MAX_STREAMS = 250;

export interface SecureServer {
  readonly host: string;
  readonly port: number;
  /** https://host:port with a loopback host when bound to all interfaces. */
  readonly url: string;
  close(graceMs?: number): Promise<void>;
}

export interface SecureServerOptions {
  options: Pick<ServingOptions, 'bindAddress' | 'tlsMinVersion' | 'tlsCipherSuites' | 'tlsSniCertKey' | 'http2MaxStreamsPerConnection'>;
  /** The port to bind; 0 picks a free one (tests). */
  port: number;
  serving: ServingPair;
  clientCaPem?: string;
  chain: RequestChain;
  log: Logger;
}

async function sniContexts(o: SecureServerOptions, base: SecureContextOptions): Promise<Map<string, SecureContext> | undefined> {
  const list = o.options.tlsSniCertKey ?? [];
  if (!list.length) return undefined;
  const entries: SniEntry<SecureContext>[] = [];
  for (const item of list) {
    let cert: string, key: string;
    try {
      [cert, key] = await Promise.all([readFile(item.certFile, 'utf8'), readFile(item.keyFile, 'utf8')]);
    } catch (e) {
      throw new StartupError('--tls-sni-cert-key', `cannot read "${item.certFile}"/"${item.keyFile}": ${(e as Error).message}`, { cause: e });
    }
    try {
      entries.push({ names: item.names, certPem: cert, value: createSecureContext({ ...base, cert, key }) });
    } catch (e) {
      throw new StartupError('--tls-sni-cert-key', `invalid pair "${item.certFile}"/"${item.keyFile}": ${(e as Error).message}`, { cause: e });
    }
  }
  return buildSniMap(entries);
}

export async function startSecureServer(o: SecureServerOptions): Promise<SecureServer> {
  const base: SecureContextOptions = { minVersion: minTlsVersion(o.options.tlsMinVersion) };
  const ciphers = cipherList(o.options.tlsCipherSuites);
  if (ciphers) base.ciphers = ciphers;
  if (o.clientCaPem) base.ca = o.clientCaPem;

  let defaultContext: SecureContext;
  try {
    defaultContext = createSecureContext({ ...base, cert: o.serving.certPem, key: o.serving.keyPem });
  } catch (e) {
    throw new StartupError('--tls-cert-file', `invalid serving certificate or key (${o.serving.certFile}): ${(e as Error).message}`, { cause: e });
  }
  const sni = await sniContexts(o, base);

  const serverOptions: http2.SecureServerOptions = {
    ...base,
    cert: o.serving.certPem,
    key: o.serving.keyPem,
    allowHTTP1: true,
    requestCert: !!o.clientCaPem,
    rejectUnauthorized: false,
  };
  if (sni) serverOptions.SNICallback = sniCallback(sni, defaultContext);
  // Advertised in SETTINGS_MAX_CONCURRENT_STREAMS. As in Kubernetes, a value that is not
  // positive means the Go runtime's default (golang.org/x/net/http2: 250); Node's own default
  // advertises no limit at all.
  const maxStreams = o.options.http2MaxStreamsPerConnection ?? 0;
  serverOptions.settings = { maxConcurrentStreams: maxStreams > 0 ? maxStreams : DEFAULT_HTTP2_MAX_STREAMS };

  const server = http2.createSecureServer(serverOptions);
  let warnedShape = false;
  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('secureConnection', (s: Socket) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  server.on('session', (s: http2.ServerHttp2Session) => {
    // Node's Map of open streams keeps finished streams alive through young-generation GCs
    // (see h2-stream-table.ts); without the expected shape Node's Map stays.
    if (!adoptStreamTable(s) && !warnedShape) {
      warnedShape = true;
      o.log.debug('http2 session state has an unexpected shape; keeping Node\'s stream map');
    }
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    s.on('error', (e: Error) => o.log.debug({ err: e.message }, 'http2 session error'));
  });
  server.on('tlsClientError', (e: Error) => o.log.debug({ err: e.message }, 'TLS handshake failed'));
  // HTTP/1.1 requests (the allowHTTP1 fallback) arrive as 'request' events. Listening to it makes
  // Node add its compat 'stream' listener (Http2ServerRequest/Response around every stream),
  // which is dropped again at once: HTTP/2 streams are served by onStream alone, exactly once.
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => o.chain.handle(req, res));
  server.removeAllListeners('stream');
  server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => onStream(o.chain, stream, headers, rawHeaders));
  // With allowHTTP1 the server emits HTTP/1.1 'upgrade' requests here.
  server.on('upgrade', (req, socket, head) => o.chain.handleUpgrade(req, socket, head));

  const host = o.options.bindAddress || '0.0.0.0';
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      reject(new StartupError('--secure-port', `cannot listen on ${host}:${o.port}: ${e.code ?? e.message}`, { cause: e }));
    };
    server.once('error', onError);
    server.listen(o.port, host, () => { server.off('error', onError); resolve(); });
  });
  server.on('error', (e: Error) => o.log.error({ err: e.message }, 'listener error'));
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;

  let closing: Promise<void> | undefined;
  const close = (graceMs = 2000): Promise<void> => {
    closing ??= (async () => {
      o.chain.abortAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      const timer = setTimeout(() => {
        for (const s of sessions) s.destroy();
        for (const s of sockets) s.destroy();
      }, graceMs);
      // HTTP/1.1 keep-alive sockets idle between requests would hold close() open.
      for (const s of sockets) if (!sessionOwns(sessions, s)) s.end();
      await closed;
      clearTimeout(timer);
    })();
    return closing;
  };
  return { host, port, url: `https://${urlHost}:${port}`, close };
}

/** Swallows stream errors (a reset by the client, a write after a reset): the 'close' that follows ends the request. */
function ignoreStreamError(): void { /* see above */ }

/**
 * Serves one HTTP/2 stream through the chain with the lean request/response pair. The chain
 * listens for the stream's errors (chain.handle, first thing); a stream refused here gets a
 * listener of its own instead, so each stream has exactly one.
 */
function onStream(chain: RequestChain, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, rawHeaders: string[]): void {
  const req = new H2Request(stream, headers, rawHeaders);
  const res = new H2Response(stream);
  // What the compat layer did before emitting 'request': CONNECT is not served, and a body
  // announced with Expect: 100-continue is invited at once.
  if (req.method === 'CONNECT') return refuse(res, http2.constants.HTTP_STATUS_METHOD_NOT_ALLOWED);
  const expect = headers['expect'];
  if (expect !== undefined) {
    if (expect !== '100-continue') return refuse(res, http2.constants.HTTP_STATUS_EXPECTATION_FAILED);
    stream.additionalHeaders({ [http2.constants.HTTP2_HEADER_STATUS]: http2.constants.HTTP_STATUS_CONTINUE });
  }
  chain.handle(req, res);
}

/** Answers a stream the chain never sees with a bare status. */
function refuse(res: H2Response, status: number): void {
  res.stream.on('error', ignoreStreamError);
  res.statusCode = status;
  res.end();
}

function sessionOwns(sessions: Set<http2.ServerHttp2Session>, s: Socket): boolean {
  for (const sess of sessions) if ((sess.socket as unknown) === s) return true;
  return false;
}
