/**
 * Registers the node-agent-backed subresources on the REST layer: pods/log, pods/exec,
 * pods/attach, pods/portforward and nodes/proxy; and the API server's own proxies to pods and
 * services (installResourceProxies).
 * Returns the connection so the caller closes it on shutdown.
 */
import type { ApiserverConfig } from '../../../flags/apiserver.js';
import type { Logger } from 'pino';
import type { RestApi } from '../rest/rest-api.js';
import { createNodeConnection, type NodeAgentClientOptions, type NodeConnection } from './node-connection.js';
import { createProxyClients, type ProxyClients } from './http-proxy.js';
import { createNodeProxyHandler } from './node-proxy.js';
import { createPodLogHandler } from './pod-log.js';
import { createPodStreamHandlers } from './pod-stream.js';
import { createResourceProxyHandlers } from './resource-proxy.js';

/** The --nodeagent-* options as a typed client configuration. */
export function nodeAgentClientOptionsFromConfig(c: ApiserverConfig, log?: Logger): NodeAgentClientOptions {
  return {
    https: c.nodeagentHttps,
    preferredAddressTypes: c.nodeagentPreferredAddressTypes,
    timeoutMs: c.nodeagentTimeout > 0 ? c.nodeagentTimeout : 5000,
    allowLoopback: c.nodeagentAllowLoopback,
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

/**
 * Registers pods/proxy and services/proxy (the API server reaches pod IPs itself; HTTPS targets
 * see `clientCert`, the --proxy-client-cert-file pair). Returns the clients to close on shutdown.
 */
export function installResourceProxies(rest: RestApi, clientCert?: { cert: Buffer; key: Buffer }): ProxyClients {
  const clients = createProxyClients(clientCert);
  for (const kind of ['pods', 'services'] as const) {
    const h = createResourceProxyHandlers(kind, clients);
    rest.addSubresourceHandler('', kind, 'proxy', h.handler, h.upgrade);
  }
  return clients;
}
