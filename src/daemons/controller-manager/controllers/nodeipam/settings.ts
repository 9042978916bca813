/**
 * The node IPAM controller's options, checked as Kubernetes checks them when the controller
 * starts (startNodeIpamController and NewNodeIpamController): a problem is an Error whose
 * message names the option, which fails the controller's start.
 */
import type { ControllerManagerConfig } from '../../../../flags/controller-manager.js';
import { cidrsOverlap, formatBigCidr, parseBigCidr, type BigCidr } from './cidr-set.js';

const RANGE_ALLOCATOR = 'RangeAllocator';
/** Allocator kinds Kubernetes knows that need a cloud provider (corectl has none). */
const CLOUD_ALLOCATORS = new Set(['CloudAllocator', 'IPAMFromCluster', 'IPAMFromCloud']);

export interface NodeIpamSettings {
  clusterCidr: BigCidr;
  nodeMaskSize: number;
  /** The service range when it overlaps the cluster CIDR (its blocks are never handed out). */
  serviceCidr?: BigCidr;
  /** Why --service-cluster-ip-range is not used, for a log line (Kubernetes only warns). */
  serviceCidrIgnored?: string;
}

type IpamConfig = Pick<ControllerManagerConfig, 'allocateNodeCidrs' | 'cidrAllocatorType' | 'clusterCidr' | 'nodeCidrMaskSize' | 'serviceClusterIpRange'>;

/** The settings, or undefined when --allocate-node-cidrs is off; throws on a bad combination. */
export function nodeIpamSettings(c: IpamConfig): NodeIpamSettings | undefined {
  if (!c.allocateNodeCidrs) return undefined;
  const kind = c.cidrAllocatorType;
  if (kind === 'CloudAllocator') throw new Error("--cidr-allocator-type is set to 'CloudAllocator' but cloud provider is not configured");
  if (CLOUD_ALLOCATORS.has(kind)) throw new Error(`--cidr-allocator-type is set to '${kind}', which needs a cloud provider; corectl has none (use ${RANGE_ALLOCATOR})`);
  if (kind !== RANGE_ALLOCATOR) throw new Error(`Invalid CIDR allocator type: ${kind}`);

  const text = c.clusterCidr.trim();
  if (!text) throw new Error('Controller: Must specify --cluster-cidr if --allocate-node-cidrs is set');
  const clusterCidr = parseBigCidr(text);
  if (!clusterCidr) throw new Error(`invalid --cluster-cidr "${text}": invalid CIDR address: ${text} (dual-stack lists are not supported)`);
  const nodeMaskSize = c.nodeCidrMaskSize;
  if (clusterCidr.prefix > nodeMaskSize) {
    throw new Error('Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size configured for CIDR family');
  }
  if (nodeMaskSize > clusterCidr.bits) throw new Error(`--node-cidr-mask-size ${nodeMaskSize} is longer than an IPv${clusterCidr.bits === 32 ? 4 : 6} address`);

  const out: NodeIpamSettings = { clusterCidr, nodeMaskSize };
  const serviceText = c.serviceClusterIpRange.trim();
  if (serviceText) {
    const service = parseBigCidr(serviceText);
    if (!service) out.serviceCidrIgnored = `unsuccessful parsing of service CIDR "${serviceText}"`;
    else if (cidrsOverlap(clusterCidr, service)) out.serviceCidr = service;
    else out.serviceCidrIgnored = `service CIDR ${formatBigCidr(service)} does not overlap the cluster CIDR`;
  }
  return out;
}
