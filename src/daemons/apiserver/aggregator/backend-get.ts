/** One GET to an extension server as the aggregator itself (availability, discovery, OpenAPI). */
import type * as https from 'node:https';
import { request } from 'node:https';
import { identityHeaders, type BackendTarget, type IdentityHeaderNames } from './backend.js';

const TIMEOUT_MS = 5000;

/**
 * The body of a 2xx answer to GET `path` (an Error otherwise), asked as system:kube-aggregator
 * in system:masters, as Kubernetes' aggregator asks, so the backend's authorization lets it see
 * its discovery and OpenAPI whatever its policy.
 */
export function backendGet(agent: https.Agent, target: BackendTarget, path: string, names: IdentityHeaderNames): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: target.host, port: target.port, path, method: 'GET', agent,
      servername: /^[\d.]+$|:/.test(target.serverName) ? undefined : target.serverName,
      headers: { accept: 'application/json', ...identityHeaders({ name: 'system:kube-aggregator', groups: ['system:masters'] }, names) },
      timeout: TIMEOUT_MS,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const code = res.statusCode ?? 0;
        if (code < 200 || code >= 300) reject(new Error(`bad status from https://${target.host}:${target.port}${path}: ${code}`));
        else resolve(Buffer.concat(chunks));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000}s`)));
    req.on('error', reject);
    req.end();
  });
}
