/**
 * Puts the aggregator in front of the REST layer (one call in main.ts): requests of extension
 * servers' group/versions go to the aggregator, everything else to the REST layer as before,
 * and discovery lists the extension groups.
 */
import type { Logger } from 'pino';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import type { RestApi } from '../rest/rest-api.js';
import { Aggregator } from './aggregator.js';
import { DEFAULT_IDENTITY_HEADERS, type IdentityHeaderNames } from './backend.js';

export interface AggregatorSetup {
  store: ObjectStore;
  log: Logger;
  proxyClientCert?: { readonly cert: Buffer; readonly key: Buffer };
  /** --requestheader-username-headers, -group-headers, -extra-headers-prefix: the first of each names the outgoing header. */
  requestheaderUsernameHeaders?: readonly string[];
  requestheaderGroupHeaders?: readonly string[];
  requestheaderExtraHeadersPrefix?: readonly string[];
  /** --enable-aggregator-routing. */
  enableAggregatorRouting: boolean;
  checkIntervalMs?: number;
}

export function identityHeaderNamesOf(s: Pick<AggregatorSetup, 'requestheaderUsernameHeaders' | 'requestheaderGroupHeaders' | 'requestheaderExtraHeadersPrefix'>): IdentityHeaderNames {
  const first = (l: readonly string[] | undefined, d: string): string => l?.map((x) => x.trim()).find((x) => x !== '') ?? d;
  return {
    user: first(s.requestheaderUsernameHeaders, DEFAULT_IDENTITY_HEADERS.user),
    group: first(s.requestheaderGroupHeaders, DEFAULT_IDENTITY_HEADERS.group),
    extraPrefix: first(s.requestheaderExtraHeadersPrefix, DEFAULT_IDENTITY_HEADERS.extraPrefix),
  };
}

/** Starts the aggregator and routes `rest`'s requests through it; returns it (stop() on shutdown). */
export async function installAggregator(rest: RestApi, s: AggregatorSetup): Promise<Aggregator> {
  const aggregator = new Aggregator({
    registry: rest.registry, store: s.store, log: s.log, served: () => rest.servedGroups(),
    ...(s.proxyClientCert ? { proxyClientCert: s.proxyClientCert } : {}),
    identityHeaders: identityHeaderNamesOf(s), routeToEndpoints: s.enableAggregatorRouting,
    ...(s.checkIntervalMs !== undefined ? { checkIntervalMs: s.checkIntervalMs } : {}),
  });
  const inner = rest.handle.bind(rest);
  rest.handle = async (ctx, req, res) => {
    if (await aggregator.handle(ctx, req, res)) return;
    await inner(ctx, req, res);
  };
  const innerUpgrade = rest.handleUpgrade.bind(rest);
  rest.handleUpgrade = (ctx, req, socket, head) => {
    if (!aggregator.handleUpgrade(ctx, req, socket, head)) innerUpgrade(ctx, req, socket, head);
  };
  rest.setExternalApis({ groups: () => aggregator.externalGroups(), openapi: aggregator.openapi });
  await aggregator.start();
  // A custom resource served or withdrawn gets or loses its local APIService at once.
  rest.onServedGroupsChange(() => aggregator.kick());
  return aggregator;
}
