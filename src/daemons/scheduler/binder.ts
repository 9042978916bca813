/**
 * Binding: POST pods/<name>/binding with a Binding whose target is the node. The pod's uid
 * rides along as a precondition, so a pod deleted and re-created under the same name while
 * we decided is not bound by mistake.
 */
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import type { Pod } from './types.js';

export interface Binder {
  bind(pod: Pod, nodeName: string, signal?: AbortSignal): Promise<void>;
}

export function bindingFor(pod: Pod, nodeName: string): KubeObject {
  const m = pod.metadata ?? {};
  return {
    apiVersion: 'v1', kind: 'Binding',
    metadata: { name: m.name, namespace: m.namespace, ...(m.uid ? { uid: m.uid } : {}) },
    target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
  };
}

export class ApiBinder implements Binder {
  constructor(private readonly client: RestClient) {}

  async bind(pod: Pod, nodeName: string, signal?: AbortSignal): Promise<void> {
    const m = pod.metadata ?? {};
    await this.client.create(
      { group: '', version: 'v1', resource: 'pods', namespace: m.namespace ?? 'default' },
      bindingFor(pod, nodeName),
      { name: m.name ?? '', subresource: 'binding', ...(signal ? { signal } : {}) },
    );
  }
}
