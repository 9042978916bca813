/** Small response helpers shared by the agent's handlers: JSON bodies and Status errors. */
import type { ServerResponse } from 'node:http';

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': data.length });
  res.end(data);
}

export function sendStatus(res: ServerResponse, code: number, reason: string, message: string): void {
  sendJson(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: code < 400 ? 'Success' : 'Failure', message, reason, code });
}

export async function readRequestBody(req: import('node:http').IncomingMessage, limit = 3 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > limit) throw new Error(`request body larger than ${limit} bytes`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}
