/**
 * exec/attach for WebSocket clients: the client's channel connection on one side, a SPDY
 * remote-command session with the runtime's streaming server on the other.
 *
 *   client ch 0 (stdin)  → runtime `stdin` stream; v5 close of ch 0 → FIN on it
 *   client ch 4 (resize) → runtime `resize` stream (tty only)
 *   runtime stdout/stderr → client ch 1 / 2
 *   runtime `error` stream (a v4 Status JSON when the command ends) → client ch 3, then close 1000
 *
 * Streams are opened in the order kubectl opens them (error, stdin, stdout, stderr, resize), and
 * exactly the ones the runtime expects for the request it was given, before the client's
 * WebSocket is accepted: a runtime that cannot be reached gets the client a plain HTTP error.
 */
import type { Logger } from 'pino';
import type { SpdySession, SpdyStream } from '../../../util/spdy/session.js';
import { ERROR, RESIZE, STDERR, STDIN, STDOUT, type ChannelConnection } from './ws-channels.js';

export interface StreamOptions {
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

export interface RemoteStreams {
  readonly error: SpdyStream;
  readonly stdin?: SpdyStream;
  readonly stdout?: SpdyStream;
  readonly stderr?: SpdyStream;
  readonly resize?: SpdyStream;
}

export async function openRemoteStreams(session: SpdySession, o: StreamOptions): Promise<RemoteStreams> {
  const open = (type: string): Promise<SpdyStream> => session.openStream({ streamtype: type });
  const error = await open('error');
  const stdin = o.stdin ? await open('stdin') : undefined;
  const stdout = o.stdout ? await open('stdout') : undefined;
  const stderr = o.stderr && !o.tty ? await open('stderr') : undefined;
  const resize = o.tty ? await open('resize') : undefined;
  return { error, ...(stdin ? { stdin } : {}), ...(stdout ? { stdout } : {}), ...(stderr ? { stderr } : {}), ...(resize ? { resize } : {}) };
}

function readAll(s: SpdyStream): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.once('end', () => resolve(Buffer.concat(chunks)));
    s.once('close', () => resolve(Buffer.concat(chunks)));
  });
}

const NO_STATUS = JSON.stringify({
  metadata: {}, status: 'Failure', reason: 'InternalError', code: 500,
  message: 'the container runtime ended the stream without reporting how the command ended',
});

/** What goes on the client's error channel for its protocol version. */
export function errorChannelPayload(statusJson: string, version: number): Buffer | undefined {
  if (version >= 4) return Buffer.from(statusJson);
  // v1-v3 carry only a failure's message, as text.
  try {
    const st = JSON.parse(statusJson) as { status?: string; message?: string };
    if (st.status === 'Success') return undefined;
    return Buffer.from(st.message ?? statusJson);
  } catch {
    return statusJson ? Buffer.from(statusJson) : undefined;
  }
}

/**
 * Bridges until the command ends or either side goes away. `clientVersion` is the channel
 * protocol version (1..5) the client negotiated.
 */
export async function bridgeRemoteCommand(conn: ChannelConnection, clientVersion: number, session: SpdySession, streams: RemoteStreams, log: Logger): Promise<void> {
  let clientGone = false;
  const statusText = readAll(streams.error);
  const outputs = [
    streams.stdout ? conn.pipeFrom(streams.stdout, STDOUT) : Promise.resolve(),
    streams.stderr ? conn.pipeFrom(streams.stderr, STDERR) : Promise.resolve(),
  ];
  const handlers = {
    data: (ch: number, payload: Buffer): void => {
      if (ch === STDIN && streams.stdin && !streams.stdin.writableEnded) streams.stdin.write(payload);
      else if (ch === RESIZE && streams.resize && !streams.resize.writableEnded) streams.resize.write(payload);
    },
    closeChannel: (ch: number): void => { if (ch === STDIN && streams.stdin && !streams.stdin.writableEnded) streams.stdin.end(); },
    closed: (): void => { clientGone = true; session.destroy(); },
  };
  conn.attach(handlers);
  await Promise.all(outputs);
  const status = (await statusText).toString('utf8').trim();
  if (clientGone) return;
  const payload = errorChannelPayload(status || NO_STATUS, clientVersion);
  if (payload) await conn.send(ERROR, payload);
  log.debug({ status }, 'remote command ended');
  conn.close();
  session.close();
}
