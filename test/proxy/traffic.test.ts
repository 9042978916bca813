/**
 * Packets through the proxy's rules, without containerd: a "node" network namespace and a
 * "pod" namespace joined by a veth pair, an HTTP server in the pod, the proxier programming the
 * node. curl from the node reaches the ClusterIP and the NodePort; curl from the pod reaches
 * its own server through the ClusterIP (hairpin, masqueraded); a service without endpoints is
 * refused at once.
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { NftCommand } from '../../src/daemons/proxy/nft-command.js';
import { IptablesWriter } from '../../src/daemons/proxy/iptables-writer.js';
import { Proxier } from '../../src/daemons/proxy/proxier.js';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait-for.js';
import { service, slice } from './fixtures.js';

const skip = netnsSkipReason() ?? (spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0 ? undefined : 'needs curl');
if (skip) {
  t.plan(0, `traffic through the rules: ${skip}`);
} else {
  // Built inside the test, so that a failing step still runs the teardowns.
  for (const mode of ['nftables', 'iptables'] as const) t.test(`routes (${mode})`, async (t) => {
    const node = createNetns('cpxnode');
    const pod = createNetns('cpxpod');
    t.teardown(() => { pod.remove(); node.remove(); });
    const veth = `cpx${node.name.slice(-6)}`;
    const sh = (...argv: string[]): void => {
      const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr}`);
    };
    sh('ip', 'link', 'add', `${veth}n`, 'netns', node.name, 'type', 'veth', 'peer', 'name', `${veth}p`, 'netns', pod.name);
    node.run('ip', 'addr', 'add', '10.88.0.1/24', 'dev', `${veth}n`);
    node.run('ip', 'link', 'set', `${veth}n`, 'up');
    // The node's own address (NodePorts) and a default route, as a real node has.
    node.run('ip', 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink-peer');
    node.run('ip', 'addr', 'add', '192.0.2.100/24', 'dev', 'uplink');
    node.run('ip', 'link', 'set', 'uplink-peer', 'up');
    node.run('ip', 'link', 'set', 'uplink', 'up');
    node.run('ip', 'route', 'add', 'default', 'via', '192.0.2.1');
    node.run('sysctl', '-qw', 'net.ipv4.ip_forward=1');
    pod.run('ip', 'addr', 'add', '10.88.0.2/24', 'dev', `${veth}p`);
    pod.run('ip', 'link', 'set', `${veth}p`, 'up');
    pod.run('ip', 'route', 'add', 'default', 'via', '10.88.0.1');
    const server = spawn('ip', ['netns', 'exec', pod.name, process.execPath, '-e',
      "require('http').createServer((q, s) => s.end('pod says hi to ' + q.socket.remoteAddress)).listen(8080, '0.0.0.0')"], { stdio: 'ignore' });
    t.teardown(() => { server.kill('SIGKILL'); });

    const services = [
      service('web', '10.0.0.50', { type: 'NodePort', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }] }),
      service('empty', '10.0.0.51'),
    ];
    const slices = [slice('web', [{ ip: '10.88.0.2' }])];
    const rules = { table: 'corectl-proxy', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['10.88.0.0/24'], nodePortCidrs: [] };
    const proxier = new Proxier({
      ...(mode === 'nftables' ? { nft: new NftCommand([...node.exec, 'nft']), rules } : { writer: new IptablesWriter(rules, 'node-a', node.exec) }),
      nodeName: 'node-a', log: pino({ level: 'silent' }),
      services: () => services, slices: () => slices, minSyncPeriodMs: 0, syncPeriodMs: 3600_000,
    });
    const curl = (ns: typeof node, url: string): { code: number | null; out: string } => {
      const r = spawnSync('ip', ['netns', 'exec', ns.name, 'curl', '-sS', '--max-time', '10', url], { encoding: 'utf8' });
      return { code: r.status, out: r.stdout + r.stderr };
    };

    await proxier.syncOnce(true);
    await waitFor('the pod\'s server', () => curl(node, 'http://10.88.0.2:8080/').code === 0, 10_000);
    t.match(curl(node, 'http://10.0.0.50/').out, /^pod says hi to 10\.88\.0\.1$|^pod says hi to 192\.0\.2\.100$/, 'the node reaches the ClusterIP');
    t.match(curl(node, 'http://192.0.2.100:30080/').out, /^pod says hi to 10\.88\.0\.1$/, 'the node reaches the NodePort, masqueraded');
    t.match(curl(pod, 'http://10.0.0.50/').out, /^pod says hi to 10\.88\.0\.1$/, 'the pod reaches itself through its service (hairpin, masqueraded)');
    const refused = curl(node, 'http://10.0.0.51/');
    t.equal(refused.code, 7, 'curl: failed to connect');
    t.match(refused.out, /Connection refused|Couldn't connect/, 'no endpoints: refused, not a timeout');
    const fromPod = curl(pod, 'http://10.0.0.51/');
    t.match(fromPod.out, /Connection refused|Couldn't connect/, 'refused for a pod too (forwarded traffic)');
  });
}
