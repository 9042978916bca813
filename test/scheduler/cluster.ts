/** Helpers for scheduler tests against a real API server: nodes with status, pods, polling. */
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { RestClient } from '../../src/client/rest-client.js';
import type { Node, Pod } from '../../src/daemons/scheduler/types.js';

export const NODES = { group: '', version: 'v1', resource: 'nodes' } as const;
export const podsIn = (namespace = 'default') => ({ group: '', version: 'v1', resource: 'pods', namespace });
export const eventsIn = (namespace = 'default') => ({ group: '', version: 'v1', resource: 'events', namespace });

/** Creates the node, then posts its status through the status subresource. */
export async function createNode(client: RestClient, node: Node): Promise<void> {
  const { status, ...rest } = node;
  await client.create(NODES, rest as KubeObject);
  await client.patch(NODES, node.metadata?.name ?? '', 'merge', { status }, { subresource: 'status' });
}

export async function createPod(client: RestClient, pod: Pod): Promise<void> {
  const { status: _status, ...rest } = pod;
  const meta = { ...rest.metadata };
  delete meta.uid;
  await client.create(podsIn(meta.namespace), { ...rest, metadata: meta } as KubeObject);
}

export async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let wait = 20;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 250);
  }
}

export async function nodeOf(client: RestClient, name: string, namespace = 'default'): Promise<string> {
  try {
    const p = await client.get(podsIn(namespace), name) as Pod;
    return p.spec?.nodeName ?? '';
  } catch (e) {
    if (isApiError(e) && e.code === 404) return '';
    throw e;
  }
}

export function waitBound(client: RestClient, name: string, timeoutMs?: number): Promise<string> {
  return until(`pod ${name} to be bound`, async () => (await nodeOf(client, name)) || undefined, timeoutMs);
}

export async function eventsFor(client: RestClient, pod: string, reason: string, namespace = 'default'): Promise<KubeObject[]> {
  const list = await client.list(eventsIn(namespace), { fieldSelector: `involvedObject.name=${pod},reason=${reason}` });
  return list.items ?? [];
}

export function waitEvent(client: RestClient, pod: string, reason: string, match: (message: string) => boolean = () => true): Promise<KubeObject> {
  return until(`a ${reason} event for ${pod}`, async () => (await eventsFor(client, pod, reason)).find((e) => match(String(e.message ?? ''))));
}
