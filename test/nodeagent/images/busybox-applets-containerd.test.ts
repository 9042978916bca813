/**
 * The offline busybox image (test/helpers/oci-image.ts, what `make up` imports) is usable for
 * the README's smoke tests inside a real pod on containerd: httpd serves, wget fetches by pod IP
 * and by a name from /etc/hosts, nslookup asks a DNS server (a tiny one of ours), ping answers,
 * and sh, cat, ps, date and echo work. Debian's static busybox resolves names through glibc's
 * NSS at run time, so the image carries /etc/nsswitch.conf and the NSS libraries.
 */
import { createSocket } from 'node:dgram';
import t from 'tap';
import type { PodSandboxConfig } from '../../../src/daemons/nodeagent/runtime/runtime.js';
import { CriRuntime } from '../../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { managedHostsFile } from '../../../src/daemons/nodeagent/etc-hosts.js';
import { containerdSkipReason, startContainerd } from '../../helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../../helpers/oci-image.js';

const skip = containerdSkipReason();
if (skip) t.plan(0, `containerd: ${skip}`);
else await main();

/** Answers every A query with `answer` (AAAA and others: no records). */
async function tinyDns(address: string, answer: string): Promise<{ port: number; close: () => void }> {
  const s = createSocket('udp4');
  s.on('message', (q, rinfo) => {
    if (q.length < 12) return;
    let i = 12;
    while (i < q.length && q[i] !== 0) i += (q[i] ?? 0) + 1;
    const question = q.subarray(12, i + 5);
    const qtype = q.readUInt16BE(i + 1);
    const header = Buffer.from(q.subarray(0, 12));
    header.writeUInt16BE(0x8180, 2); // response, recursion available, no error
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(qtype === 1 ? 1 : 0, 6);
    header.writeUInt16BE(0, 8);
    header.writeUInt16BE(0, 10);
    const rr = qtype === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, ...answer.split('.').map(Number)]) : Buffer.alloc(0);
    s.send(Buffer.concat([header, question, rr]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => s.bind(53, address, r));
  return { port: 53, close: () => s.close() };
}

async function main(): Promise<void> {
  const cd = await startContainerd();
  const rt = new CriRuntime({ endpoint: cd.endpoint });
  const gateway = cd.subnet.replace(/\.0\/24$/, '.1');
  let dns: { close: () => void } | undefined;
  t.teardown(async () => { dns?.close(); await rt.close(); await cd.stop(); });
  const sc: PodSandboxConfig = {
    metadata: { name: 'applets', uid: 'uid-applets', namespace: 'default' }, hostname: 'applets',
    dnsConfig: { servers: [gateway], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
  };
  const sid = await rt.runPodSandbox(sc);
  const ip = (await rt.podSandboxStatus(sid)).ip;
  dns = await tinyDns(gateway, ip);
  const web = await rt.createContainer(sid, { metadata: { name: 'web' }, image: BUSYBOX_IMAGE, command: ['httpd', '-f', '-p', '80', '-h', '/etc'] }, sc);
  await rt.startContainer(web);
  const run = async (cmd: string): Promise<{ code: number; out: string }> => {
    const r = await rt.execSync(web, ['sh', '-c', cmd], 30);
    return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
  };
  // httpd starts in the background of the container: wait for it to listen.
  for (let i = 0; i < 50 && (await run(`wget -q -O - http://${ip}/passwd`)).code !== 0; i++) await new Promise((r) => setTimeout(r, 100));

  t.test('wget fetches from httpd by pod IP and by a name from /etc/hosts', async (t) => {
    const byIp = await run(`wget -q -O - http://${ip}/passwd`);
    t.equal(byIp.code, 0, byIp.out);
    t.match(byIp.out, /^root:x:0:0/);
    // The hosts file the node agent writes (etc-hosts.ts), IPv6 lines included.
    const hosts = managedHostsFile({ metadata: { name: 'applets', namespace: 'default' }, spec: {} }, [ip], 'cluster.local');
    const byName = await run(`printf '%s' '${hosts}${ip}\tweb-by-name\n' > /etc/hosts && wget -q -O - http://web-by-name/group && wget -q -O - http://localhost/group >/dev/null && wget -q -O - http://applets/group >/dev/null`);
    t.equal(byName.code, 0, byName.out);
    t.match(byName.out, /^root:x:0:/);
  });

  t.test('nslookup asks the pod\'s DNS server; wget resolves through it with the search path', async (t) => {
    const r = await run('nslookup web.default.svc.cluster.local');
    t.equal(r.code, 0, r.out);
    t.ok(r.out.includes(`Address: ${ip}`), r.out);
    const w = await run('wget -q -O - http://web/passwd');
    t.equal(w.code, 0, w.out);
    t.match(w.out, /^root:x:0:0/);
  });

  t.test('ping answers', async (t) => {
    const r = await run(`ping -c 1 -W 5 ${ip}`);
    t.equal(r.code, 0, r.out);
    t.match(r.out, /1 packets received/);
  });

  t.test('the image carries nsswitch.conf and the NSS modules', async (t) => {
    const r = await run('cat /etc/nsswitch.conf; ls /lib/*-linux-gnu/');
    t.equal(r.code, 0, r.out);
    t.match(r.out, /hosts: files dns/);
    t.match(r.out, /libnss_dns\.so\.2/);
    t.match(r.out, /libnss_files\.so\.2/);
  });

  t.test('sh, cat, ps, date, echo', async (t) => {
    const r = await run('cat /etc/hostname; ps; date +%Y >/dev/null && echo date-ok; echo hello');
    t.equal(r.code, 0, r.out);
    t.match(r.out, /applets/);
    t.match(r.out, /httpd/);
    t.match(r.out, /date-ok\nhello/);
  });
}
