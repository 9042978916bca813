/** The upstreams of --resolv-conf: order kept, the DNS server itself left out (no loops). */
import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostUpstreams, resolvConfNameservers } from '../../../src/daemons/proxy/dns/forwarder.js';

t.test('nameservers of a resolv.conf', async (t) => {
  t.same(resolvConfNameservers('# c\nnameserver 10.9.0.1\nsearch a b\nnameserver fe80::1%eth0 ; x\nnameserver bogus\noptions ndots:2\nnameserver 1.1.1.1\n'), ['10.9.0.1', 'fe80::1%eth0', '1.1.1.1']);
});

t.test('the server\'s own addresses are skipped on port 53 only', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'dns-fwd-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const f = join(dir, 'resolv.conf');
  await writeFile(f, 'nameserver 192.168.5.2\nnameserver 127.0.0.53\nnameserver 8.8.8.8\n');
  t.same((await hostUpstreams(f, [{ host: '192.168.5.2', port: 53 }])).map((u) => u.host), ['127.0.0.53', '8.8.8.8'], 'our listen address is not an upstream');
  t.same((await hostUpstreams(f, [{ host: '192.168.5.2', port: 5353 }])).map((u) => u.host), ['192.168.5.2', '127.0.0.53', '8.8.8.8'], 'another port: not us');
  t.same((await hostUpstreams(f, [{ host: '0.0.0.0', port: 53 }])).map((u) => u.host).includes('127.0.0.1'), false, 'unspecified: every local address is us');
  t.same(await hostUpstreams(join(dir, 'missing'), []), [], 'no file: no upstreams');
});
