/**
 * The authenticators of --basic-auth-file, --authentication-token-webhook-config-file and
 * --requestheader-*, built from the options before anything listens: a missing or bad file is a
 * start-up error naming its option.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { BasicAuthAuthenticator } from '../../auth/authenticators/basic-auth.js';
import { CaBundle } from '../../auth/authenticators/ca-bundle.js';
import { RequestHeaderAuthenticator, trimHeaderNames, type RequestHeaderConfig } from '../../auth/authenticators/request-header.js';
import { TokenWebhookAuthenticator } from '../../auth/authenticators/token-webhook.js';
import { loadCoreconfig } from '../../client/coreconfig.js';
import { StartupError, type ServingOptions } from './serving-options.js';

/** What the API server publishes in kube-system/extension-apiserver-authentication. */
export interface PublishedAuthentication {
  clientCaPem?: string;
  requestHeader?: { caPem: string; config: RequestHeaderConfig };
}

const DEFAULT_WEBHOOK_TTL_MS = 120_000;

export async function buildBasicAuth(opts: Pick<ServingOptions, 'basicAuthFile'>, log: Logger): Promise<BasicAuthAuthenticator | undefined> {
  if (!opts.basicAuthFile) return undefined;
  try {
    const { authenticator, warnings } = await BasicAuthAuthenticator.load(opts.basicAuthFile);
    for (const w of warnings) log.warn(w);
    return authenticator;
  } catch (e) {
    throw new StartupError('--basic-auth-file', (e as Error).message, { cause: e });
  }
}

export async function buildTokenWebhook(
  opts: Pick<ServingOptions, 'authenticationTokenWebhookConfigFile' | 'authenticationTokenWebhookCacheTtl'>,
  log: Logger, apiAudiences: readonly string[] = [],
): Promise<TokenWebhookAuthenticator | undefined> {
  const file = opts.authenticationTokenWebhookConfigFile;
  if (!file) return undefined;
  let conn;
  try {
    conn = await loadCoreconfig({ path: file });
  } catch (e) {
    throw new StartupError('--authentication-token-webhook-config-file', (e as Error).message, { cause: e });
  }
  return new TokenWebhookAuthenticator(conn, {
    cacheTtlMs: opts.authenticationTokenWebhookCacheTtl ?? DEFAULT_WEBHOOK_TTL_MS,
    apiAudiences, log: log.child({ component: 'token-webhook' }),
  });
}

type RequestHeaderOptions = Pick<ServingOptions, 'requestheaderClientCaFile' | 'requestheaderAllowedNames'
  | 'requestheaderUsernameHeaders' | 'requestheaderGroupHeaders' | 'requestheaderExtraHeadersPrefix'>;

/** On when --requestheader-client-ca-file is set (Kubernetes ignores the other options without it). */
export async function buildRequestHeader(opts: RequestHeaderOptions): Promise<{
  authenticator: RequestHeaderAuthenticator; config: RequestHeaderConfig; published: { caPem: string; config: RequestHeaderConfig };
} | undefined> {
  const file = opts.requestheaderClientCaFile;
  if (!file) return undefined;
  let caPem: string;
  try {
    caPem = await readFile(file, 'utf8');
  } catch (e) {
    throw new StartupError('--requestheader-client-ca-file', `error reading ${file}: ${(e as Error).message}`, { cause: e });
  }
  let bundle: CaBundle;
  try {
    bundle = new CaBundle(caPem);
  } catch (e) {
    throw new StartupError('--requestheader-client-ca-file', `error loading certs from ${file}: ${(e as Error).message}`, { cause: e });
  }
  if (bundle.size === 0) throw new StartupError('--requestheader-client-ca-file', `error loading certs from ${file}: no PEM certificate`);
  const trimmed = (option: string, names: string[] | undefined): string[] => {
    try { return trimHeaderNames(names ?? []); } catch (e) { throw new StartupError(option, (e as Error).message, { cause: e }); }
  };
  const config: RequestHeaderConfig = {
    usernameHeaders: trimmed('--requestheader-username-headers', opts.requestheaderUsernameHeaders),
    groupHeaders: trimmed('--requestheader-group-headers', opts.requestheaderGroupHeaders),
    extraHeaderPrefixes: trimmed('--requestheader-extra-headers-prefix', opts.requestheaderExtraHeadersPrefix),
    allowedNames: [...(opts.requestheaderAllowedNames ?? [])],
  };
  return { authenticator: new RequestHeaderAuthenticator(bundle, config), config, published: { caPem, config } };
}
