/**
 * Assembles the serving side of the API server: authentication and authorization chains,
 * health checks, metrics, the filter chain and the TLS listener. `run` (main.ts) calls it with
 * the REST layer; tests call it directly with a stub REST handler.
 */
import type { Logger } from 'pino';
import type { TokenAuthenticator } from '../../auth/authenticator.js';
import type { Authorizer } from '../../auth/authorizer.js';
import { buildAuthentication, buildAuthorizer, type AuthenticationSetup } from './auth-setup.js';
import { RequestChain, type RestHandler } from './chain.js';
import type { AuditSink } from './filters/audit.js';
import { HealthChecks } from './health.js';
import { createApiserverMetrics, type ApiserverMetrics } from './metrics.js';
import { startSecureServer, type SecureServer } from './server.js';
import type { ServingOptions } from './serving-options.js';
import { loadServingPair, type ServingPair } from './tls/serving-certs.js';
import { cipherList, minTlsVersion } from '../../util/tls-options.js';

export interface ServeOptions {
  options: ServingOptions;
  log: Logger;
  rest?: RestHandler;
  /** Readiness of storage: resolves when reachable. */
  storageCheck?: () => Promise<void>;
  /** Bind this port instead of options.securePort (0 = any free port; tests). */
  portOverride?: number;
  metrics?: ApiserverMetrics;
  audit?: AuditSink;
  /** Implementations for authorization modes beyond AlwaysAllow/AlwaysDeny (RBAC, Node ...). */
  extraAuthorizationModes?: Record<string, Authorizer>;
  /** More bearer-token checkers (service-account JWTs ...), after the token file. */
  extraTokenAuthenticators?: TokenAuthenticator[];
  /** The server's token audiences (the token webhook asks for them). */
  apiAudiences?: readonly string[];
}

export interface Serving {
  /** Undefined when --secure-port=0. */
  readonly server: SecureServer | undefined;
  readonly serving: ServingPair | undefined;
  readonly health: HealthChecks;
  readonly metrics: ApiserverMetrics;
  readonly chain: RequestChain;
  /** Fails /readyz, aborts open requests, closes the listener. */
  stop(graceMs?: number): Promise<void>;
}

/** Everything that can fail on a bad option, done before anything starts listening. */
export interface PreparedServing {
  readonly authorizer: Authorizer;
  readonly authn: AuthenticationSetup;
  readonly serving: ServingPair | undefined;
}

export async function prepareServing(o: ServeOptions): Promise<PreparedServing> {
  const authorizer = buildAuthorizer(o.options.authorizationMode, o.extraAuthorizationModes);
  const authn = await buildAuthentication(o.options, o.log, o.extraTokenAuthenticators, o.apiAudiences ? { apiAudiences: o.apiAudiences } : {});
  minTlsVersion(o.options.tlsMinVersion);
  cipherList(o.options.tlsCipherSuites);
  const listening = o.portOverride !== undefined || o.options.securePort > 0;
  const serving = listening ? await loadServingPair(o.options, o.log) : undefined;
  return { authorizer, authn, serving };
}

export async function startServing(o: ServeOptions, prepared?: PreparedServing): Promise<Serving> {
  const log = o.log;
  const { authorizer, authn, serving } = prepared ?? await prepareServing(o);
  const metrics = o.metrics ?? createApiserverMetrics();
  const health = new HealthChecks({ ...(o.storageCheck ? { storage: o.storageCheck } : {}), log });
  const chain = new RequestChain({
    log, options: o.options, authenticator: authn.authenticator, authorizer, metrics, health,
    ...(o.rest ? { rest: o.rest } : {}), ...(o.audit ? { audit: o.audit } : {}),
  });
  const port = o.portOverride ?? o.options.securePort;
  let server: SecureServer | undefined;
  if (serving) {
    server = await startSecureServer({
      options: o.options, port, serving, chain, log,
      ...(authn.clientCaPem ? { clientCaPem: authn.clientCaPem } : {}),
    });
  } else {
    log.warn('--secure-port=0: the secure listener is off');
  }
  return {
    server, serving, health, metrics, chain,
    async stop(graceMs?: number): Promise<void> {
      health.markShuttingDown();
      if (server) await server.close(graceMs);
      else chain.abortAll();
      authn.close();
    },
  };
}
