/**
 * --admission-control-config-file: an AdmissionConfiguration (apiserver.config.k8s.io/v1, and
 * the v1alpha1 and apiserver.k8s.io/v1alpha1 forms Kubernetes still reads) naming a
 * configuration per plugin, inline (`configuration:`) or in a file (`path:`, relative to the
 * AdmissionConfiguration's own directory). YAML or JSON. Every fault is a start-up error naming
 * the option; configurations of plugins that are not enabled are read but not used (as Kubernetes).
 * Kubernetes' legacy form is still read: a file that is no AdmissionConfiguration but has a
 * top-level `imagePolicy` or `podNodeSelectorPluginConfig` is the configuration of both
 * ImagePolicyWebhook and PodNodeSelector.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { load } from 'js-yaml';
import { StartupError } from '../serving-options.js';

export const ADMISSION_CONFIG_OPTION = '--admission-control-config-file';

const ADMISSION_CONFIG_VERSIONS = new Set(['apiserver.config.k8s.io/v1', 'apiserver.config.k8s.io/v1alpha1', 'apiserver.k8s.io/v1alpha1']);

/** One plugin's configuration as written (a decoded object), with where it came from for messages. */
export interface RawPluginConfig {
  readonly config: unknown;
  /** The file it was read from (the AdmissionConfiguration itself for inline ones). */
  readonly file: string;
}

const fail = (message: string): StartupError => new StartupError(ADMISSION_CONFIG_OPTION, message);

/** Reads a YAML or JSON file into plain data. */
export function readConfigDocument(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw fail(`cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  try {
    return load(text) ?? {};
  } catch (e) {
    throw fail(`${what} ${file} is not valid YAML or JSON: ${(e as Error).message.split('\n')[0]}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The plugin configurations the file names, by plugin name. */
export function loadAdmissionConfigFile(file: string): Map<string, RawPluginConfig> {
  const doc = readConfigDocument(file, 'admission configuration');
  if (!isObject(doc)) throw fail(`${file}: expected an AdmissionConfiguration object`);
  const apiVersion = String(doc['apiVersion'] ?? '');
  if (doc['kind'] !== 'AdmissionConfiguration' && ('imagePolicy' in doc || 'podNodeSelectorPluginConfig' in doc)) {
    return new Map(['ImagePolicyWebhook', 'PodNodeSelector'].map((n) => [n, { config: doc, file }]));
  }
  if (doc['kind'] !== 'AdmissionConfiguration' || !ADMISSION_CONFIG_VERSIONS.has(apiVersion)) {
    throw fail(`${file}: expected kind AdmissionConfiguration of apiserver.config.k8s.io/v1 (or v1alpha1), got ${JSON.stringify(`${apiVersion}, Kind=${String(doc['kind'] ?? '')}`)}`);
  }
  const plugins = doc['plugins'] ?? [];
  if (!Array.isArray(plugins)) throw fail(`${file}: plugins must be a list`);
  const out = new Map<string, RawPluginConfig>();
  plugins.forEach((p: unknown, i) => {
    if (!isObject(p) || typeof p['name'] !== 'string' || !p['name']) throw fail(`${file}: plugins[${i}].name is required`);
    const name = p['name'];
    if (out.has(name)) throw fail(`${file}: plugin ${name} is configured twice`);
    const path = p['path'];
    if (path !== undefined && path !== '' && typeof path !== 'string') throw fail(`${file}: plugins[${i}].path must be a string`);
    if (typeof path === 'string' && path) {
      const target = isAbsolute(path) ? path : resolve(dirname(file), path);
      out.set(name, { config: readConfigDocument(target, `configuration of ${name}`), file: target });
    } else if (p['configuration'] !== undefined && p['configuration'] !== null) {
      out.set(name, { config: p['configuration'], file });
    }
  });
  return out;
}

/** A plugin's configuration parser failed: the start-up error names the option, the plugin and its file. */
export function pluginConfigError(name: string, raw: RawPluginConfig | undefined, e: unknown): StartupError {
  const where = raw ? ` (${raw.file})` : '';
  return fail(`${name}${where}: ${(e as Error).message}`);
}

/** Checks a configuration's apiVersion and kind (plugins' own config kinds). */
export function expectKind(doc: unknown, versions: readonly string[], kind: string): Record<string, unknown> {
  if (!isObject(doc)) throw new Error(`expected a ${kind} object`);
  const v = String(doc['apiVersion'] ?? '');
  if (doc['kind'] !== kind || !versions.includes(v)) {
    throw new Error(`expected ${kind} of ${versions.join(' or ')}, got apiVersion ${JSON.stringify(v)} kind ${JSON.stringify(String(doc['kind'] ?? ''))}`);
  }
  return doc;
}

export { isObject };
