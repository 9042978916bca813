/**
 * corectl server approves node serving certificate requests (signer kubernetes.io/kubelet-serving)
 * whose names and addresses are the requesting node's own. Kubernetes' csrapproving controller
 * approves client requests only (sarapprove.go: nodeclient, selfnodeclient) and leaves serving
 * requests to the cluster admin, because only the admin knows which names a node may claim;
 * so this lives in corectl server, not in csrapproving:
 * the server is that admin for the nodes that join it.
 *
 * Approved when all hold (anything else is left for a human: `kubectl certificate approve`):
 *  - the requester (spec.username) is system:node:<name> in group system:nodes, and the
 *    request's CN is that same user and its O exactly [system:nodes];
 *  - usages include server auth and are among digital signature, key encipherment, server auth;
 *  - it names at least one DNS name or IP, no e-mail addresses or URIs, and every DNS name is a
 *    Hostname/InternalDNS/ExternalDNS address, every IP an InternalIP/ExternalIP address, of the
 *    Node object <name> (a request sent before the node registered waits for it).
 * Pending serving requests are looked at every `periodMs` (a list of CSRs: few and small).
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import { loadX509 } from '../../util/pki.js';

const CSRS = { group: 'certificates.k8s.io', version: 'v1', resource: 'certificatesigningrequests' } as const;
const NODES = { group: '', version: 'v1', resource: 'nodes' } as const;
export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
const ALLOWED_USAGES = new Set(['digital signature', 'key encipherment', 'server auth']);
const DNS_TYPES = new Set(['Hostname', 'InternalDNS', 'ExternalDNS']);
const IP_TYPES = new Set(['InternalIP', 'ExternalIP']);
export const APPROVAL_MESSAGE = 'Auto approving node serving certificate: its names and addresses are the node\'s own (corectl server).';

interface CsrSpec { signerName?: string; username?: string; groups?: string[]; usages?: string[]; request?: string }
interface Condition { type?: string; status?: string }

export interface ServingRequest { commonName: string; organizations: string[]; dnsNames: string[]; ips: string[]; others: number }

/** The subject and SANs of a PEM PKCS#10 request. */
export async function parseServingRequest(pem: string): Promise<ServingRequest> {
  const x509 = await loadX509();
  const csr = new x509.Pkcs10CertificateRequest(pem);
  const out: ServingRequest = { commonName: csr.subjectName.getField('CN').at(-1) ?? '', organizations: csr.subjectName.getField('O'), dnsNames: [], ips: [], others: 0 };
  const san = csr.getExtension('2.5.29.17');
  if (san) {
    for (const n of new x509.SubjectAlternativeNameExtension(san.rawData).names.items) {
      if (n.type === 'dns') out.dnsNames.push(n.value);
      else if (n.type === 'ip') out.ips.push(n.value);
      else out.others++;
    }
  }
  return out;
}

/** The node name the request is for, or why it is not ours to approve. */
export function checkRequester(spec: CsrSpec, req: ServingRequest): { node: string } | { reason: string } {
  const user = spec.username ?? '';
  if (!user.startsWith('system:node:') || user.length === 'system:node:'.length) return { reason: `requester ${user} is not a node` };
  if (!(spec.groups ?? []).includes('system:nodes')) return { reason: 'requester is not in system:nodes' };
  if (req.commonName !== user) return { reason: `CN ${req.commonName} is not the requester ${user}` };
  if (req.organizations.length !== 1 || req.organizations[0] !== 'system:nodes') return { reason: 'O is not exactly system:nodes' };
  const usages = spec.usages ?? [];
  if (!usages.includes('server auth') || usages.some((u) => !ALLOWED_USAGES.has(u))) return { reason: `usages ${usages.join(', ')} are not a serving certificate's` };
  if (req.others > 0) return { reason: 'the request names e-mail addresses or URIs' };
  if (req.dnsNames.length + req.ips.length === 0) return { reason: 'the request names no DNS name or IP address' };
  return { node: user.slice('system:node:'.length) };
}

/** Names of `req` the node's addresses do not have (empty: all its own). */
export function foreignNames(req: ServingRequest, node: KubeObject): string[] {
  const addresses = ((node.status ?? {}) as { addresses?: { type?: string; address?: string }[] }).addresses ?? [];
  const dns = new Set(addresses.filter((a) => DNS_TYPES.has(a.type ?? '')).map((a) => a.address));
  const ips = new Set(addresses.filter((a) => IP_TYPES.has(a.type ?? '')).map((a) => a.address));
  return [...req.dnsNames.filter((d) => !dns.has(d)), ...req.ips.filter((i) => !ips.has(i))];
}

function pending(csr: KubeObject): boolean {
  const st = (csr.status ?? {}) as { certificate?: string; conditions?: Condition[] };
  return !st.certificate && !(st.conditions ?? []).some((c) => c.type === 'Approved' || c.type === 'Denied' || c.type === 'Failed');
}

export class ServingCsrApprover {
  /** CSR names already reported as left for the admin (log once each). */
  private readonly reported = new Set<string>();

  constructor(private readonly client: RestClient, private readonly log: Logger, private readonly periodMs = 2000) {}

  /** One pass over the pending serving requests; returns the names approved. */
  async pass(signal?: AbortSignal): Promise<string[]> {
    const list = await this.client.list(CSRS, signal ? { signal } : {});
    const approved: string[] = [];
    for (const csr of list.items) {
      const spec = (csr.spec ?? {}) as CsrSpec;
      const name = csr.metadata?.name ?? '';
      if (spec.signerName !== SERVING_SIGNER || !pending(csr)) continue;
      if (await this.consider(csr, spec, name, signal)) approved.push(name);
    }
    return approved;
  }

  private leave(name: string, reason: string): false {
    if (!this.reported.has(name)) {
      this.reported.add(name);
      this.log.info({ csr: name, reason }, 'serving certificate request left for the cluster admin');
    }
    return false;
  }

  private async consider(csr: KubeObject, spec: CsrSpec, name: string, signal?: AbortSignal): Promise<boolean> {
    let req: ServingRequest;
    try {
      req = await parseServingRequest(Buffer.from(spec.request ?? '', 'base64').toString('latin1'));
    } catch {
      return this.leave(name, 'the request does not parse');
    }
    const who = checkRequester(spec, req);
    if ('reason' in who) return this.leave(name, who.reason);
    let node: KubeObject;
    try {
      node = await this.client.get(NODES, who.node, signal ? { signal } : {});
    } catch {
      return false; // not registered yet: asked again at the next pass
    }
    const foreign = foreignNames(req, node);
    if (foreign.length) return this.leave(name, `names not among node ${who.node}'s addresses: ${foreign.join(', ')}`);
    const st = (csr.status ?? {}) as { conditions?: unknown[] };
    const condition = { type: 'Approved', status: 'True', reason: 'AutoApproved', message: APPROVAL_MESSAGE, lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
    await this.client.update(CSRS, { ...csr, status: { ...st, conditions: [...(st.conditions ?? []), condition] } }, { subresource: 'approval', ...(signal ? { signal } : {}) });
    this.log.info({ csr: name, node: who.node }, 'node serving certificate request approved');
    return true;
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.pass(signal);
      } catch (e) {
        if (!signal.aborted) this.log.warn({ err: (e as Error).message }, 'serving certificate approval pass failed');
      }
      await new Promise<void>((r) => {
        const onAbort = (): void => { clearTimeout(t); r(); };
        const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); r(); }, this.periodMs);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
  }
}
