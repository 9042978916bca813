/**
 * `corectl apiserver`: opens storage, builds the object store and the REST API, serves them
 * behind the filter chain on --secure-port, prints one ready line, and shuts down cleanly when
 * ctx.signal aborts (listener, then REST, then storage). A start-up failure prints one line
 * naming the option and returns non-zero.
 */
import type { Logger } from 'pino';
import type { ApiserverConfig } from '../../flags/apiserver.js';
import { openBackend, type BackendSet } from '../../storage/backend-factory.js';
import { startCompactor } from '../../storage/compactor.js';
import { startCountMetrics } from '../../storage/count-metrics.js';
import { allResources } from '../../api/resources/registry.js';
import type { EtcdTlsOptions } from '../../storage/etcd/etcd-client.js';
import { createObjectStore } from '../../storage/object-store.js';
import { storeMirror } from '../../storage/store-mirror.js';
import { loadEncryptionConfig, type EncryptionConfig } from '../../storage/encryption/config.js';
import { installReviewResources } from './reviews/install.js';
import { installComponentStatuses, storageComponents } from './componentstatus/handler.js';
import { prepareServiceAccounts } from './serviceaccount/install.js';
import { installNodeProxies, installResourceProxies, nodeAgentClientOptionsFromConfig } from './proxy/install.js';
import { createReviewHandler } from './reviews/review-handler.js';
import type { ObjectStore } from '../../storage/object-store-types.js';
import { createRestApi, type RestApi } from './rest/rest-api.js';
import { conflictingPlugins, removedPlugins, selectedPlugins } from './admission/chain.js';
import { loadAdmissionPluginConfigs } from './admission/load-configs.js';
import type { RestConfig } from './rest/types.js';
import { createApiserverMetrics, type ApiserverMetrics } from './metrics.js';
import { prepareServing, startServing, type Serving } from './serve.js';
import { setupAudit } from './audit/setup.js';
import { resolveAdvertiseAddress } from './tls/serving-certs.js';
import { readOptionFile, StartupError, withServingDefaults, type ServingOptions } from './serving-options.js';
import { setAllowPrivileged } from '../../api/resources/core/pod-spec.js';
import { corsPatterns } from './filters/cors.js';
import { buildAuthorizerModes } from './authorizer-modes.js';
import { startRbacBootstrap } from './rbac-bootstrap.js';
import { oidcOptionsFromConfig } from './oidc-setup.js';
import { AuthenticationInfoPublisher } from './registry/extension-apiserver-authentication.js';
import { installAggregator } from './aggregator/install.js';

/** ApiserverConfig → the serving subset (the option parser keeps '' for unset strings). */
export function servingOptionsFromConfig(c: ApiserverConfig): ServingOptions {
  const opt = (s: string): string | undefined => (s === '' ? undefined : s);
  const o: Partial<ServingOptions> = {
    securePort: c.securePort,
    bindAddress: c.bindAddress || '0.0.0.0',
    certDir: c.certDir,
    tlsCipherSuites: c.tlsCipherSuites,
    tlsSniCertKey: c.tlsSniCertKey,
    http2MaxStreamsPerConnection: c.http2MaxStreamsPerConnection,
    serviceClusterIpRange: c.serviceClusterIpRange,
    anonymousAuth: c.anonymousAuth,
    enableBootstrapTokenAuth: c.enableBootstrapTokenAuth,
    authorizationMode: c.authorizationMode.split(',').map((s) => s.trim()).filter((s) => s !== ''),
    maxRequestsInflight: c.maxRequestsInflight,
    maxMutatingRequestsInflight: c.maxMutatingRequestsInflight,
    requestTimeout: c.requestTimeout,
    minRequestTimeout: c.minRequestTimeout,
    maxConnectionBytesPerSec: c.maxConnectionBytesPerSec,
    corsAllowedOrigins: c.corsAllowedOrigins,
    authenticationTokenWebhookCacheTtl: c.authenticationTokenWebhookCacheTtl,
    requestheaderAllowedNames: c.requestheaderAllowedNames,
    requestheaderUsernameHeaders: c.requestheaderUsernameHeaders,
    requestheaderGroupHeaders: c.requestheaderGroupHeaders,
    requestheaderExtraHeadersPrefix: c.requestheaderExtraHeadersPrefix,
    profiling: c.profiling,
    enableLogsHandler: c.enableLogsHandler,
    logsDir: c.logsDir,
    enableApiDocsUi: c.enableApiDocsUi,
  };
  try {
    corsPatterns(c.corsAllowedOrigins);
  } catch (e) {
    throw new StartupError('--cors-allowed-origins', (e as Error).message, { cause: e });
  }
  const strings: Array<[keyof ServingOptions, string]> = [
    ['advertiseAddress', c.advertiseAddress], ['tlsCertFile', c.tlsCertFile], ['tlsPrivateKeyFile', c.tlsPrivateKeyFile],
    ['tlsMinVersion', c.tlsMinVersion], ['clientCaFile', c.clientCaFile], ['tokenAuthFile', c.tokenAuthFile],
    ['basicAuthFile', c.basicAuthFile], ['authenticationTokenWebhookConfigFile', c.authenticationTokenWebhookConfigFile],
    ['requestheaderClientCaFile', c.requestheaderClientCaFile],
  ];
  for (const [k, v] of strings) {
    const value = opt(v);
    if (value !== undefined) (o as Record<string, unknown>)[k] = value;
  }
  const oidc = oidcOptionsFromConfig(c);
  if (oidc) o.oidc = oidc;
  return withServingDefaults(o);
}

/** --watch-cache-sizes entries 'resource[.group]#size'. */
function watchCacheSizes(list: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of list) {
    const [name = '', size = ''] = item.split('#');
    const n = Number(size);
    if (!name || !Number.isInteger(n) || n < 0) throw new StartupError('--watch-cache-sizes', `invalid entry "${item}" (want resource[.group]#size)`);
    out[name] = n;
  }
  return out;
}

function restConfigOf(c: ApiserverConfig, options: ServingOptions, advertiseAddress: string): RestConfig {
  const storageVersions: Record<string, string> = {};
  for (const part of c.storageVersions.split(',').map((s) => s.trim()).filter(Boolean)) {
    const slash = part.lastIndexOf('/');
    if (slash > 0) storageVersions[part.slice(0, slash)] = part.slice(slash + 1);
  }
  return {
    serviceClusterIpRange: c.serviceClusterIpRange,
    serviceNodePortRange: c.serviceNodePortRange,
    advertiseAddress,
    securePort: options.securePort,
    runtimeConfig: c.runtimeConfig,
    storageVersions,
    eventTtl: c.eventTtl,
    apiserverCount: c.apiserverCount,
    coreServiceNodePort: c.coreServiceNodePort,
    endpointReconcilerType: c.endpointReconcilerType,
    repairMalformedUpdates: c.repairMalformedUpdates,
    enableGarbageCollector: c.enableGarbageCollector,
    listChunking: c.featureGates['APIListChunking'] !== false,
    responseCompression: c.featureGates['APIResponseCompression'] === true,
    deleteCollectionWorkers: c.deleteCollectionWorkers,
    minRequestTimeout: c.minRequestTimeout,
    admissionPlugins: admissionPluginsOf(c),
    ...proxyClientCertOf(c),
  };
}

/** --proxy-client-cert-file and --proxy-client-key-file go together (webhook calls present them). */
function proxyClientCertOf(c: ApiserverConfig): { proxyClientCert?: { cert: Buffer; key: Buffer } } {
  const certFile = c.proxyClientCertFile ?? '';
  const keyFile = c.proxyClientKeyFile ?? '';
  if (!certFile && !keyFile) return {};
  if (!keyFile) throw new StartupError('--proxy-client-cert-file', 'needs --proxy-client-key-file as well');
  if (!certFile) throw new StartupError('--proxy-client-key-file', 'needs --proxy-client-cert-file as well');
  // Read now, so a bad path stops the start instead of failing every webhook call later.
  return { proxyClientCert: { cert: readOptionFile(certFile, '--proxy-client-cert-file')!, key: readOptionFile(keyFile, '--proxy-client-key-file')! } };
}

/** --enable-admission-plugins / --disable-admission-plugins → the plugins that run; a name in both is a start-up error. */
function admissionPluginsOf(c: ApiserverConfig): string[] {
  const sel = { enable: c.enableAdmissionPlugins, disable: c.disableAdmissionPlugins };
  const both = conflictingPlugins(sel);
  if (both.length) throw new StartupError('--disable-admission-plugins', `${both.join(', ')} also named in --enable-admission-plugins`);
  const removed = removedPlugins(sel);
  if (removed.length) throw new StartupError('--enable-admission-plugins', removed.join('; '));
  return selectedPlugins(sel);
}

function waitForAbort(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export interface ApiserverParts {
  serving: Serving;
  store: ObjectStore;
  rest: RestApi;
  storage: BackendSet;
  metrics: ApiserverMetrics;
  /** Closes listener, REST and storage in that order. */
  shutdown(): Promise<void>;
}

/** Opens storage, the object store and the REST API, then starts serving; `portOverride` lets tests bind port 0. */
export async function startApiserverParts(config: ApiserverConfig, log: Logger, portOverride?: number): Promise<ApiserverParts> {
  const options = servingOptionsFromConfig(config);
  // Option errors first; then the admission configuration file (plugins may read files it names).
  const admissionPluginConfigs = await loadAdmissionPluginConfigs(config.admissionControlConfigFile, admissionPluginsOf(config));
  setAllowPrivileged(config.allowPrivileged);
  const metrics = createApiserverMetrics();
  const cleanups: Array<() => Promise<void>> = [];
  // Option errors surface before storage opens or anything listens.
  // Service-account tokens: the authenticator joins the chain now, the store lookup and the
  // serviceaccounts/token subresource once the REST layer exists.
  const serviceAccounts = await prepareServiceAccounts(config, { log: log.child({ component: 'serviceaccount-token' }) });
  // RBAC, Node, ABAC, Webhook: built now (file errors stop the start), fed the store below.
  const authzModes = await buildAuthorizerModes(config, options.authorizationMode, log);
  const serveOptions = {
    options, log, metrics, ...(portOverride !== undefined ? { portOverride } : {}),
    extraAuthorizationModes: authzModes.authorizers,
    ...(serviceAccounts.authenticator ? { extraTokenAuthenticators: [serviceAccounts.authenticator] } : {}),
    apiAudiences: serviceAccounts.apiAudiences,
  };
  const prepared = await prepareServing(serveOptions);
  // Background work of the authenticators (OIDC discovery) stops last.
  cleanups.push(async () => prepared.authn.close());
  // Audit: policy and backends (--audit-*); buffered events are written out after the listener closes.
  const auditSink = await setupAudit(config, log, metrics.registry);
  if (auditSink) {
    Object.assign(serveOptions, { audit: auditSink });
    cleanups.push(() => auditSink.shutdown());
  }
  try {
    const tls: { -readonly [K in keyof EtcdTlsOptions]: EtcdTlsOptions[K] } = {};
    if (config.kvstoreCafile) tls.caFile = config.kvstoreCafile;
    if (config.kvstoreCertfile) tls.certFile = config.kvstoreCertfile;
    if (config.kvstoreKeyfile) tls.keyFile = config.kvstoreKeyfile;
    // Encryption at rest: read before storage opens, so a bad file is a start-up error.
    let encryption: EncryptionConfig | undefined;
    if (config.experimentalEncryptionProviderConfig) encryption = await loadEncryptionConfig(config.experimentalEncryptionProviderConfig);
    const storage = await openBackend({
      servers: config.kvstoreServers, overrides: config.kvstoreServersOverrides, dataDir: config.dataDir,
      storageBackend: config.storageBackend, tls, log: log.child({ component: 'storage' }),
    });
    cleanups.unshift(() => storage.close());
    const store = createObjectStore({
      backendFor: (g, r) => storage.for(g, r),
      prefix: config.kvstorePrefix,
      ...(encryption ? { transformer: (g: string, r: string) => encryption.transformerFor(g, r) } : {}),
      watchCache: { enabled: config.watchCache, defaultSize: config.defaultWatchCacheSize, sizes: watchCacheSizes(config.watchCacheSizes) },
      log: log.child({ component: 'object-store' }),
    });
    cleanups.unshift(() => store.close());
    // Object counts per resource, polled in the background and read by /metrics.
    const counts = startCountMetrics({
      count: (resource, group) => store.count(resource, group),
      resources: () => [...new Map(allResources().filter((d) => !d.storage).map((d) => [`${d.group}/${d.plural}`, { group: d.group, resource: d.plural }])).values()],
      periodMs: config.kvstoreCountMetricPollPeriod, log: log.child({ component: 'count-metrics' }),
    });
    cleanups.unshift(() => counts.stop());
    metrics.setObjectCountSource(() => counts.counts());
    const compactor = startCompactor({
      backends: () => store.backends(), intervalMs: config.kvstoreCompactionInterval, log: log.child({ component: 'compactor' }),
    });
    cleanups.unshift(() => compactor.stop());
    const restConfig = { ...restConfigOf(config, options, resolveAdvertiseAddress(options)), admissionPluginConfigs };
    const rest = createRestApi({
      store, config: restConfig, log: log.child({ component: 'rest' }), authorizer: prepared.authorizer,
    });
    // Virtual review resources (auth can-i, whoami, token review): answered, never stored.
    installReviewResources(rest, createReviewHandler({
      authorizer: prepared.authorizer,
      authenticator: prepared.authn.authenticator,
      authorizationModes: options.authorizationMode,
      apiAudiences: serviceAccounts.apiAudiences,
    }));
    // componentstatuses (`kubectl get cs`): probed on each request, never stored.
    installComponentStatuses(rest, { storage: storageComponents(config.kvstoreServers, config.kvstoreServersOverrides, storage) });
    serviceAccounts.install(rest);
    // pods/log and nodes/proxy, served by the node agents (--nodeagent-* client options).
    const nodeConn = installNodeProxies(rest, nodeAgentClientOptionsFromConfig(config, log.child({ component: 'node-proxy' })));
    cleanups.unshift(async () => { nodeConn.close(); });
    // pods/proxy and services/proxy: the API server's own HTTP proxy to pod IPs.
    const proxyClients = installResourceProxies(rest, restConfig.proxyClientCert);
    cleanups.unshift(async () => { proxyClients.close(); });
    await rest.start();
    cleanups.unshift(() => rest.stop());
    // Default RBAC roles and bindings, reconciled in the background; /readyz waits for them.
    const rbacBootstrap = startRbacBootstrap(config, rest.registry, log);
    cleanups.unshift(() => rbacBootstrap.stop());
    // kube-system/extension-apiserver-authentication: the client CAs and front-proxy settings.
    const authInfo = new AuthenticationInfoPublisher({ registry: rest.registry, store, published: prepared.authn.published, log: log.child({ component: 'authentication-info' }) });
    await authInfo.start();
    cleanups.unshift(() => authInfo.stop());
    // The aggregation layer: local APIServices, and extension servers' group/versions proxied to them.
    const aggregator = await installAggregator(rest, {
      store, log: log.child({ component: 'aggregator' }), enableAggregatorRouting: config.enableAggregatorRouting,
      requestheaderUsernameHeaders: options.requestheaderUsernameHeaders, requestheaderGroupHeaders: options.requestheaderGroupHeaders,
      requestheaderExtraHeadersPrefix: options.requestheaderExtraHeadersPrefix,
      ...(restConfig.proxyClientCert ? { proxyClientCert: restConfig.proxyClientCert } : {}),
    });
    cleanups.unshift(() => aggregator.stop());
    // Authorizers that read the store answer once their caches are synced, before serving.
    await authzModes.start(store);
    cleanups.unshift(() => authzModes.stop());
    // Bootstrap tokens are read from an in-process copy of the Secrets, synced before serving.
    if (prepared.authn.useBootstrapTokenSecrets) {
      // Bootstrap tokens live in kube-system only: no copy of other namespaces' Secrets.
      const secrets = storeMirror(store, '', 'secrets', log.child({ component: 'bootstrap-token' }), 'kube-system');
      await secrets.ready;
      prepared.authn.useBootstrapTokenSecrets(secrets);
    }
    const serving = await startServing({
      ...serveOptions,
      rest,
      storageCheck: async () => { await storage.default.currentRevision(); },
    }, prepared);
    cleanups.unshift(() => serving.stop());
    rbacBootstrap.addHealthChecks(serving.health);
    const parts: ApiserverParts = {
      serving, metrics, store, storage, rest,
      async shutdown(): Promise<void> {
        for (const c of cleanups) {
          try { await c(); } catch (e) { log.warn({ err: (e as Error).message }, 'shutdown step failed'); }
        }
      },
    };
    return parts;
  } catch (e) {
    for (const c of cleanups) { try { await c(); } catch { /* already failing */ } }
    throw e;
  }
}

export async function run(config: ApiserverConfig, ctx: { log: Logger; signal: AbortSignal }): Promise<number> {
  const log = ctx.log.child({ component: 'apiserver' });
  let parts: ApiserverParts;
  try {
    parts = await startApiserverParts(config, log);
  } catch (e) {
    const line = e instanceof StartupError ? e.message : `start-up failed: ${(e as Error).message}`;
    log.error({ err: e }, line);
    process.stderr.write(`apiserver: ${line}\n`);
    return 1;
  }
  const url = parts.serving.server?.url;
  log.info({ url, certFile: parts.serving.serving?.certFile }, url ? `apiserver ready: serving on ${url}` : 'apiserver ready: secure serving off');
  await waitForAbort(ctx.signal);
  log.info('shutting down');
  await parts.shutdown();
  return 0;
}
