/**
 * The subset of the API server's configuration the serving plumbing reads. Field names match
 * `ApiserverConfig` (src/flags/apiserver.ts) so a config object can be passed straight in.
 * Durations are milliseconds unless the name says seconds.
 */
import { readFileSync } from 'node:fs';
import type { OidcServingOptions } from './oidc-setup.js';
import { StartupError } from '../../util/startup-error.js';

export { StartupError };

export interface NamedCertKeyOption {
  certFile: string;
  keyFile: string;
  names: string[];
}

export interface ServingOptions {
  /** 0 switches the secure listener off. Default 6443. */
  securePort: number;
  /** Default 0.0.0.0. */
  bindAddress: string;
  advertiseAddress?: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** Where a generated self-signed pair is kept (apiserver.crt / apiserver.key). */
  certDir: string;
  /** Go constant name, e.g. VersionTLS12 (the default). */
  tlsMinVersion?: string;
  /** Go constant names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256. */
  tlsCipherSuites?: string[];
  tlsSniCertKey?: NamedCertKeyOption[];
  /** Advertised SETTINGS_MAX_CONCURRENT_STREAMS; 0 or unset: 250, Go's default, as Kubernetes. */
  http2MaxStreamsPerConnection?: number;
  /** The first IP of this range is a SAN of a generated serving certificate. */
  serviceClusterIpRange?: string;

  clientCaFile?: string;
  tokenAuthFile?: string;
  basicAuthFile?: string;
  /** coreconfig of the token webhook, and how long its answers are kept (ms; default 2 min). */
  authenticationTokenWebhookConfigFile?: string;
  authenticationTokenWebhookCacheTtl?: number;
  /** Front proxy (request-header) authentication: on when the CA file is set. */
  requestheaderClientCaFile?: string;
  requestheaderAllowedNames?: string[];
  requestheaderUsernameHeaders?: string[];
  requestheaderGroupHeaders?: string[];
  requestheaderExtraHeadersPrefix?: string[];
  /** --enable-bootstrap-token-auth: bootstrap-token Secrets in kube-system authenticate. */
  enableBootstrapTokenAuth?: boolean;
  /** Default true. */
  anonymousAuth: boolean;
  /** Ordered authorizer names. Default ['AlwaysAllow']. */
  authorizationMode: string[];

  /** Non-mutating in-flight limit; 0 unlimited. Default 400. */
  maxRequestsInflight: number;
  /** Mutating in-flight limit; 0 unlimited. Default 200. */
  maxMutatingRequestsInflight: number;
  /** Milliseconds. Default 60000. */
  requestTimeout: number;
  /** Seconds; watches pick a random timeout above it (used by the REST layer). Default 1800. */
  minRequestTimeout: number;
  /** Bytes per second per connection for long-running responses; 0 off. */
  maxConnectionBytesPerSec: number;
  /** --cors-allowed-origins: regular expressions of origins CORS answers; empty or unset: CORS off. */
  corsAllowedOrigins?: string[];
  /** The --oidc-* options; undefined: OpenID Connect tokens are not accepted. */
  oidc?: OidcServingOptions;

  /** --profiling: /debug/pprof/ (authorized users). Default true. */
  profiling?: boolean;
  /** --enable-logs-handler: /logs/ lists and serves logsDir (authorized users). Default true. */
  enableLogsHandler?: boolean;
  /** --logs-dir (ours): the directory /logs/ serves. Default /var/log, as Kubernetes. */
  logsDir?: string;
  /** --enable-api-docs-ui: the API documentation page at /api-docs-ui/. Default false. */
  enableApiDocsUi?: boolean;
}

export const SERVING_DEFAULTS: ServingOptions = {
  securePort: 6443,
  bindAddress: '0.0.0.0',
  certDir: '/var/run/core',
  anonymousAuth: true,
  authorizationMode: ['AlwaysAllow'],
  maxRequestsInflight: 400,
  maxMutatingRequestsInflight: 200,
  requestTimeout: 60_000,
  minRequestTimeout: 1800,
  maxConnectionBytesPerSec: 0,
  profiling: true,
  enableLogsHandler: true,
  logsDir: '/var/log',
  enableApiDocsUi: false,
};

/** Fills unset fields from SERVING_DEFAULTS. */
export function withServingDefaults(partial: Partial<ServingOptions>): ServingOptions {
  const out: ServingOptions = { ...SERVING_DEFAULTS };
  for (const [k, v] of Object.entries(partial)) {
    if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** A file an option names, read at start: a bad path is a start-up error naming the option. */
export function readOptionFile(file: string | undefined, option: string): Buffer | undefined {
  if (!file) return undefined;
  try { return readFileSync(file); } catch (e) { throw new StartupError(option, `cannot read ${file}: ${(e as Error).message}`); }
}
