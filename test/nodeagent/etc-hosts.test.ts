/** The pod's managed /etc/hosts, as Kubernetes' node agent writes it (kubelet_pods.go). */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { managedHostsFile, writePodHostsFile } from '../../src/daemons/nodeagent/etc-hosts.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { containerConfig } from '../../src/daemons/nodeagent/runtime-config.js';

const HEADER = '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
const pod = (spec: Record<string, unknown>): Pod => ({ metadata: { name: 'web-0', namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'c' }], ...spec } } as Pod);

t.test('a plain pod: its address and name', async (t) => {
  t.equal(managedHostsFile(pod({}), ['10.244.0.5'], 'cluster.local'), `${HEADER}10.244.0.5\tweb-0\n`);
});

t.test('hostname and subdomain: the FQDN first; hostAliases after', async (t) => {
  const p = pod({ hostname: 'db-0', subdomain: 'db', hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }, { ip: '10.1.2.4', hostnames: ['baz'] }] });
  t.equal(managedHostsFile(p, ['10.244.0.5'], 'cluster.local'),
    `${HEADER}10.244.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n`);
});

t.test('on the host network: the node\'s file and the aliases; none without an address', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'etc-hosts-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'node-hosts'), '127.0.0.1 localhost\n192.0.2.9 node1\n');
  const path = await writePodHostsFile(pod({ hostNetwork: true, hostAliases: [{ ip: '1.2.3.4', hostnames: ['x'] }] }), { podDir: dir, podIp: '192.0.2.9', clusterDomain: 'cluster.local', nodeHostsPath: join(dir, 'node-hosts') });
  t.equal(await readFile(path ?? '', 'utf8'), '127.0.0.1 localhost\n192.0.2.9 node1\n\n# Entries added by HostAliases.\n1.2.3.4\tx\n');
  t.equal(await writePodHostsFile(pod({}), { podDir: dir, podIp: '', clusterDomain: 'cluster.local' }), undefined);
});

t.test('mounted unless the container mounts /etc/hosts itself', async (t) => {
  const base = { pod: pod({}), restartCount: 0, image: 'i', env: new Map<string, string>(), command: [], args: [], cfsQuota: true, hostsFile: '/p/etc-hosts' };
  const plain = containerConfig({ ...base, container: { name: 'c' }, volumePaths: new Map() });
  t.match(plain.mounts, [{ containerPath: '/etc/hosts', hostPath: '/p/etc-hosts' }]);
  const own = containerConfig({ ...base, container: { name: 'c', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] }, volumePaths: new Map([['h', '/v/h']]) });
  t.same(own.mounts?.map((m) => m.hostPath), ['/v/h']);
});
