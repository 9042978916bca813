/**
 * Start-up half of admission: the plugin configurations of --admission-control-config-file,
 * parsed by the plugins that are enabled. Any fault is a StartupError naming the option.
 */
import { parsePluginConfigs } from './chain.js';
import { loadAdmissionConfigFile, pluginConfigError, type RawPluginConfig } from './config-file.js';

export async function loadAdmissionPluginConfigs(file: string, plugins: readonly string[]): Promise<ReadonlyMap<string, unknown>> {
  const raw: Map<string, RawPluginConfig> = file ? loadAdmissionConfigFile(file) : new Map();
  try {
    return await parsePluginConfigs(plugins, new Map([...raw].map(([k, v]) => [k, v.config])));
  } catch (e) {
    const plugin = (e as { plugin?: string }).plugin ?? '';
    throw pluginConfigError(plugin, raw.get(plugin), e);
  }
}
