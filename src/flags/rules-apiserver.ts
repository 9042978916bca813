/** Cross-option rules of the API server (reference: dependent options and option meanings). */
import type { CrossRule } from './parser.js';
import type { ApiserverConfig } from './apiserver.js';
import { needsGate } from './rule-helpers.js';

export const APISERVER_RULES: readonly CrossRule<ApiserverConfig>[] = [
  needsGate('audit-log-format', 'AdvancedAuditing'),
  needsGate('audit-policy-file', 'AdvancedAuditing'),
  needsGate('audit-webhook-config-file', 'AdvancedAuditing'),
  needsGate('service-account-signing-key-file', 'TokenRequest'),
  {
    option: 'apiserver-count',
    check: (c) => (c.apiserverCount > 0 ? undefined : `--apiserver-count must be positive, got ${c.apiserverCount}`),
  },
  {
    option: 'core-service-node-port',
    check: (c) => {
      const n = c.coreServiceNodePort;
      const { base, size } = c.serviceNodePortRange;
      if (n === 0) return undefined;
      return n > 0 && n >= base && n < base + size ? undefined
        : `--core-service-node-port ${n} must be within --service-node-port-range ${base}-${base + size - 1}`;
    },
  },
  {
    option: 'oidc-issuer-url',
    check: (c) => (c.oidcIssuerUrl !== '' && !c.oidcIssuerUrl.startsWith('https://')
      ? '--oidc-issuer-url must be an https:// URL'
      : undefined),
  },
  {
    option: 'oidc-client-id',
    check: (c) => (c.oidcIssuerUrl !== '' && c.oidcClientId === ''
      ? '--oidc-client-id is required when --oidc-issuer-url is set'
      : undefined),
  },
];
