/**
 * GET /containerLogs/<namespace>/<pod>/<container>: the container's log with the options
 * `kubectl logs` sends through the API server (follow, tailLines, timestamps, sinceSeconds,
 * sinceTime, limitBytes, previous), read from the runtime's CRI-format log file.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readCriLog } from '../runtime/logs/cri-log-reader.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import type { PodManager } from '../pod-manager.js';
import { sendStatus } from './respond.js';

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? Math.floor(n) : undefined;
}

function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === 'true' || v === '1' || v === '';
}

export async function serveContainerLogs(req: IncomingMessage, res: ServerResponse, parts: string[], q: URLSearchParams, pods: PodManager, runtime: RuntimeBackend): Promise<void> {
  const [ns, podName, container] = parts;
  if (!ns || !podName || !container) { sendStatus(res, 400, 'BadRequest', 'path must be /containerLogs/<namespace>/<pod>/<container>'); return; }
  const w = pods.findPod(ns, podName);
  if (!w) { sendStatus(res, 404, 'NotFound', `pod "${podName}" in namespace "${ns}" not found`); return; }
  const previous = boolParam(q, 'previous') && q.has('previous');
  const id = w.containerId(container, previous);
  if (!id) {
    sendStatus(res, 400, 'BadRequest', previous
      ? `previous terminated container "${container}" in pod "${podName}" not found`
      : `container "${container}" in pod "${podName}" is waiting to start: ContainerCreating`);
    return;
  }
  let logPath: string;
  try {
    logPath = (await runtime.containerStatus(id)).logPath;
  } catch (e) {
    sendStatus(res, 404, 'NotFound', `container "${container}" in pod "${podName}": ${(e as Error).message}`);
    return;
  }
  if (!logPath) { sendStatus(res, 404, 'NotFound', `container "${container}" has no log file`); return; }
  const sinceSeconds = intParam(q, 'sinceSeconds');
  const sinceTime = q.get('sinceTime');
  const sinceMs = sinceSeconds !== undefined ? Date.now() - sinceSeconds * 1000 : (sinceTime ? Date.parse(sinceTime) : undefined);
  const follow = q.has('follow') && boolParam(q, 'follow') && !previous;
  const ac = new AbortController();
  req.on('close', () => ac.abort());
  res.on('close', () => ac.abort());
  const tail = intParam(q, 'tailLines');
  const limit = intParam(q, 'limitBytes');
  try {
    const gen = readCriLog(logPath, {
      ...(tail !== undefined ? { tail } : {}), ...(sinceMs !== undefined && !Number.isNaN(sinceMs) ? { sinceMs } : {}),
      ...(limit !== undefined ? { limitBytes: limit } : {}),
      timestamps: q.has('timestamps') && boolParam(q, 'timestamps'), follow, signal: ac.signal,
      isActive: async () => { try { return (await runtime.containerStatus(id)).state === 'running'; } catch { return false; } },
    });
    res.writeHead(200, { 'content-type': 'text/plain', ...(follow ? { 'transfer-encoding': 'chunked' } : {}) });
    for await (const chunk of gen) {
      if (!res.write(chunk)) await new Promise<void>((r) => { res.once('drain', r); res.once('close', r); });
      if (ac.signal.aborted) break;
    }
    res.end();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' && !res.headersSent) { sendStatus(res, 404, 'NotFound', `log file of container "${container}" not found`); return; }
    if (!res.headersSent) sendStatus(res, 500, 'InternalError', (e as Error).message);
    else res.destroy();
  }
}
