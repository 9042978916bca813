/** Writes a Status error as JSON on a response or, for upgrades, as a raw HTTP/1.1 answer. */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ApiError } from '../../../api/meta/status.js';
import type { ApiResponse } from '../context.js';
import { goJsonText } from '../../../api/codec/go-json.js';

export function writeStatus(res: ApiResponse, err: ApiError): void {
  const body = goJsonText(err.status) + '\n';
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
    ...err.headers,
  };
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.statusCode = err.code;
  res.end(body);
}

export function writeStatusToSocket(socket: Duplex, err: ApiError): void {
  if (socket.destroyed) return;
  const body = goJsonText(err.status) + '\n';
  const lines = [
    `HTTP/1.1 ${err.code} ${STATUS_CODES[err.code] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(err.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
