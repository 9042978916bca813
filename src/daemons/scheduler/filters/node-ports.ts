/**
 * Host ports must be free on the node: the same protocol and port is taken when either side
 * binds all addresses (0.0.0.0) or both bind the same address.
 */
import { ANY_IP } from '../node-info.js';
import { FITS, type Filter } from './filter.js';

export const REASON_PORTS = "node(s) didn't have free ports for the requested pod ports";

export const nodePorts: Filter = {
  name: 'NodePorts',
  filter(pod, node) {
    for (const hp of pod.hostPorts) {
      const ips = node.usedPorts.get(`${hp.protocol}/${hp.port}`);
      if (!ips || ips.size === 0) continue;
      if (hp.hostIP === ANY_IP || ips.has(ANY_IP) || ips.has(hp.hostIP)) return [REASON_PORTS];
    }
    return FITS;
  },
};
