/**
 * Chooses the runtime backend from the node agent's options:
 *   --container-runtime runtimeA | remote  → CRI v1 over gRPC at --container-runtime-endpoint
 *   --container-runtime fake               → the in-memory fake (simulated nodes)
 *   --container-runtime runtimeB           → not supported (a clear start-up error)
 * The CRI client (gRPC, protobuf loading) is imported only when chosen: a simulated node starts
 * without it.
 */
import type { Logger } from 'pino';
import { FakeRuntime, type FakeRuntimeOptions } from './fake/fake-runtime.js';
import type { RuntimeBackend } from './runtime.js';

export interface RuntimeFactoryConfig {
  /** --container-runtime. */
  readonly containerRuntime: string;
  /** --container-runtime-endpoint, e.g. unix:///run/containerd/containerd.sock. */
  readonly containerRuntimeEndpoint: string;
  /** --runtime-request-timeout in ms. */
  readonly runtimeRequestTimeoutMs?: number;
  /** Options for the fake backend (pod range, node IP ...). */
  readonly fake?: FakeRuntimeOptions;
  readonly logger?: Logger;
}

/** Raised for an unusable --container-runtime; the message names the option. */
export class RuntimeConfigError extends Error {
  override readonly name = 'RuntimeConfigError';
}

export async function createRuntimeBackend(config: RuntimeFactoryConfig): Promise<RuntimeBackend> {
  switch (config.containerRuntime) {
    case 'runtimeA':
    case 'remote': {
      const endpoint = config.containerRuntimeEndpoint;
      if (!/^(unix:\/\/\/|\/|tcp:\/\/)/.test(endpoint)) {
        throw new RuntimeConfigError(`--container-runtime-endpoint: ${JSON.stringify(endpoint)} is not unix:///path or tcp://host:port`);
      }
      const { CriRuntime } = await import('./cri/cri-runtime.js');
      return new CriRuntime({ endpoint, requestTimeoutMs: config.runtimeRequestTimeoutMs });
    }
    case 'fake':
      return new FakeRuntime({ ...config.fake, logger: config.fake?.logger ?? config.logger });
    case 'runtimeB':
      throw new RuntimeConfigError('--container-runtime: runtimeB is not supported by corectl; use runtimeA (CRI, e.g. containerd) or fake');
    default:
      throw new RuntimeConfigError(`--container-runtime: unknown runtime ${JSON.stringify(config.containerRuntime)} (want runtimeA, remote or fake)`);
  }
}
