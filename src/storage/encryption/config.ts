/**
 * --encryption-provider-config: the EncryptionConfiguration file (apiserver.config.k8s.io/v1,
 * kind EncryptionConfiguration, or the older `apiVersion: v1` / `kind: EncryptionConfig`).
 *
 *   resources:
 *   - resources: [secrets, configmaps, deployments.apps, '*.apps', '*.', '*.*']
 *     providers:                       # the first provider (its first key) encrypts, all decrypt
 *     - aescbc: { keys: [{ name: key1, secret: <base64 32 bytes> }] }
 *     - aesgcm: { keys: [...] }
 *     - secretbox: { keys: [...] }
 *     - identity: {}
 *
 * A resource is matched by the first entry naming it: exact 'resource' (core) or
 * 'resource.group', then 'group' wildcards '*.<group>' ('*.' = every core resource), then '*.*'.
 * KMS providers are not supported and rejected with a clear error.
 */
import { readFile } from 'node:fs/promises';
import { load as loadYaml } from 'js-yaml';
import { aescbcProvider, aesgcmProvider, identityProvider, secretboxProvider } from './providers.js';
import { PrefixTransformer, type EncryptionProvider, type ValueTransformer } from './transformer.js';

export interface EncryptionRule {
  readonly resources: readonly string[];
  readonly providers: readonly EncryptionProvider[];
}

export interface EncryptionConfig {
  readonly rules: readonly EncryptionRule[];
  /** The transformer for a resource, or undefined when no rule names it (stored as is). */
  transformerFor(group: string, resource: string): ValueTransformer | undefined;
}

export class EncryptionConfigError extends Error {
  override readonly name = 'EncryptionConfigError';
}

export async function loadEncryptionConfig(path: string): Promise<EncryptionConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new EncryptionConfigError(`--experimental-encryption-provider-config: cannot read ${path}: ${(e as Error).message}`);
  }
  return parseEncryptionConfig(text);
}

export function parseEncryptionConfig(text: string): EncryptionConfig {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (e) {
    throw new EncryptionConfigError(`encryption config is not valid YAML: ${(e as Error).message}`);
  }
  const root = asObject(doc, 'the document');
  const kind = root['kind'];
  const apiVersion = root['apiVersion'];
  const modern = kind === 'EncryptionConfiguration' && apiVersion === 'apiserver.config.k8s.io/v1';
  const legacy = kind === 'EncryptionConfig' && (apiVersion === 'v1' || apiVersion === 'apiserver.config.k8s.io/v1');
  if (!modern && !legacy) {
    throw new EncryptionConfigError(`encryption config must be kind EncryptionConfiguration, apiVersion apiserver.config.k8s.io/v1 (got kind ${String(kind)}, apiVersion ${String(apiVersion)})`);
  }
  const entries = root['resources'];
  if (!Array.isArray(entries) || entries.length === 0) throw new EncryptionConfigError('encryption config: resources must be a non-empty list');
  const seen = new Set<string>();
  const rules: EncryptionRule[] = entries.map((entry, i) => {
    const e = asObject(entry, `resources[${i}]`);
    const names = e['resources'];
    if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === 'string' && n !== '')) {
      throw new EncryptionConfigError(`encryption config: resources[${i}].resources must be a non-empty list of resource names`);
    }
    for (const n of names as string[]) {
      if (seen.has(n)) throw new EncryptionConfigError(`encryption config: resource ${JSON.stringify(n)} is named twice`);
      seen.add(n);
    }
    const providersRaw = e['providers'];
    if (!Array.isArray(providersRaw) || providersRaw.length === 0) {
      throw new EncryptionConfigError(`encryption config: resources[${i}].providers must be a non-empty list`);
    }
    const providers = providersRaw.flatMap((p, j) => parseProvider(p, `resources[${i}].providers[${j}]`));
    return { resources: names as string[], providers };
  });
  const transformers = rules.map((r) => new PrefixTransformer(r.providers));
  return {
    rules,
    transformerFor(group: string, resource: string): ValueTransformer | undefined {
      const exact = group ? `${resource}.${group}` : resource;
      const candidates = group ? [exact] : [exact, `${resource}.`];
      const wildcard = `*.${group}`;
      for (const want of [candidates, [wildcard], ['*.*']]) {
        const idx = rules.findIndex((r) => r.resources.some((n) => want.includes(n)));
        if (idx >= 0) return transformers[idx];
      }
      return undefined;
    },
  };
}

function parseProvider(raw: unknown, where: string): EncryptionProvider[] {
  const p = asObject(raw, where);
  const kinds = Object.keys(p);
  if (kinds.length !== 1) throw new EncryptionConfigError(`encryption config: ${where} must set exactly one provider, got ${kinds.join(', ') || 'none'}`);
  const kind = kinds[0]!;
  if (kind === 'identity') return [identityProvider];
  if (kind === 'kms') throw new EncryptionConfigError(`encryption config: ${where}: the kms provider is not supported`);
  const make = { aescbc: aescbcProvider, aesgcm: aesgcmProvider, secretbox: secretboxProvider }[kind];
  if (!make) throw new EncryptionConfigError(`encryption config: ${where}: unknown provider ${JSON.stringify(kind)}`);
  const body = asObject(p[kind], `${where}.${kind}`);
  const keys = body['keys'];
  if (!Array.isArray(keys) || keys.length === 0) throw new EncryptionConfigError(`encryption config: ${where}.${kind}.keys must be a non-empty list`);
  const names = new Set<string>();
  return keys.map((k, i) => {
    const kw = `${where}.${kind}.keys[${i}]`;
    const key = asObject(k, kw);
    const name = key['name'];
    const secret = key['secret'];
    if (typeof name !== 'string' || name === '' || name.includes(':')) throw new EncryptionConfigError(`encryption config: ${kw}.name must be a non-empty name without ':'`);
    if (names.has(name)) throw new EncryptionConfigError(`encryption config: ${kw}: key name ${JSON.stringify(name)} is used twice`);
    names.add(name);
    if (typeof secret !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(secret)) throw new EncryptionConfigError(`encryption config: ${kw}.secret must be base64`);
    try {
      return make(name, Buffer.from(secret, 'base64'));
    } catch (e) {
      throw new EncryptionConfigError(`encryption config: ${kw}: ${(e as Error).message}`);
    }
  });
}

function asObject(v: unknown, where: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new EncryptionConfigError(`encryption config: ${where} must be a mapping`);
  return v as Record<string, unknown>;
}
