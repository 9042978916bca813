/**
 * Registers the node-agent-backed subresources on the REST layer: pods/log, pods/exec,
 * pods/attach, pods/portforward and nodes/proxy.
 * Returns the connection so the caller closes it on shutdown.
 */
import type { ApiserverConfig } from '../../../flags/apiserver.js';
import type { Logger } from 'pino';
import type { RestApi } from '../rest/rest-api.js';
import { createNodeConnection, type NodeAgentClientOptions, type NodeConnection } from './node-connection.js';
import { createNodeProxyHandler } from './node-proxy.js';
import { createPodLogHandler } from './pod-log.js';
import { createPodStreamHandlers } from './pod-stream.js';

/** The --nodeagent-* options as a typed client configuration. */
export function nodeAgentClientOptionsFromConfig(c: ApiserverConfig, log?: Logger): NodeAgentClientOptions {
  return {
    https: c.nodeagentHttps,
    preferredAddressTypes: c.nodeagentPreferredAddressTypes,
    timeoutMs: c.nodeagentTimeout > 0 ? c.nodeagentTimeout : 5000,
    ...(c.nodeagentClientCertificate ? { clientCertFile: c.nodeagentClientCertificate } : {}),
    ...(c.nodeagentClientKey ? { clientKeyFile: c.nodeagentClientKey } : {}),
    ...(c.nodeagentCertificateAuthority ? { caFile: c.nodeagentCertificateAuthority } : {}),
    ...(log ? { log } : {}),
  };
}

export function installNodeProxies(rest: RestApi, options: NodeAgentClientOptions): NodeConnection {
  const conn = createNodeConnection(options);
  rest.addSubresourceHandler('', 'pods', 'log', createPodLogHandler(conn));
  rest.addSubresourceHandler('', 'nodes', 'proxy', createNodeProxyHandler(conn));
  for (const kind of ['exec', 'attach', 'portforward'] as const) {
    const h = createPodStreamHandlers(conn, kind);
    rest.addSubresourceHandler('', 'pods', kind, h.handler, h.upgrade);
  }
  return conn;
}
