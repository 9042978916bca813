import t from 'tap';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { buildSniMap, selectByServerName } from '../../src/util/tls-sni.js';
import { issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver } from '../helpers/apiserver.js';

t.test('SNI map rules', async (t) => {
  const s = await startApiserver({ servingOnly: true });
  t.teardown(() => s.stop());
  const wildcard = await issueCert({ ca: s.ca, commonName: 'wild', dnsNames: ['*.example.com'], usages: 'server' });
  const exact = await issueCert({ ca: s.ca, commonName: 'exact.example.com', dnsNames: ['exact.example.com'], usages: 'server' });
  const other = await issueCert({ ca: s.ca, commonName: 'other', dnsNames: ['other.test'], usages: 'server' });
  const map = buildSniMap([
    { names: [], certPem: wildcard.certPem, value: 'wildcard' },
    { names: [], certPem: exact.certPem, value: 'exact' },
    { names: ['explicit.example.com', 'exact.example.com'], certPem: other.certPem, value: 'other' },
    { names: [], certPem: other.certPem, value: 'first-other' },
    { names: [], certPem: other.certPem, value: 'second-other' },
  ]);
  t.equal(selectByServerName(map, 'foo.example.com'), 'wildcard', 'wildcard matches one label');
  t.equal(selectByServerName(map, 'a.b.example.com'), undefined, 'wildcard does not match two labels');
  t.equal(selectByServerName(map, 'explicit.example.com'), 'other', 'exact beats wildcard');
  t.equal(selectByServerName(map, 'exact.example.com'), 'other', 'explicit pattern beats an extracted name');
  t.equal(selectByServerName(map, 'EXACT.example.com.'), 'other', 'case and trailing dot ignored');
  t.equal(selectByServerName(map, 'other.test'), 'first-other', 'earlier entry wins among extracted names');
  t.equal(selectByServerName(map, 'nothing.test'), undefined);
});

t.test('SNI selection over real TLS', async (t) => {
  const base = await startApiserver({ servingOnly: true });
  t.teardown(() => base.stop());
  const wildcard = await issueCert({ ca: base.ca, commonName: 'wild', dnsNames: ['*.example.com'], usages: 'server' });
  const named = await issueCert({ ca: base.ca, commonName: 'named', dnsNames: ['ignored.test'], usages: 'server' });
  const files = {
    wc: join(base.dir, 'wc.crt'), wk: join(base.dir, 'wc.key'), nc: join(base.dir, 'n.crt'), nk: join(base.dir, 'n.key'),
  };
  await writePemFile(files.wc, wildcard.certPem); await writePemFile(files.wk, wildcard.keyPem);
  await writePemFile(files.nc, named.certPem); await writePemFile(files.nk, named.keyPem);
  const s = await startApiserver({
    servingOnly: true,
    serving: { tlsSniCertKey: [{ certFile: files.wc, keyFile: files.wk, names: [] }, { certFile: files.nc, keyFile: files.nk, names: ['api.example.com'] }] },
  });
  t.teardown(() => s.stop());
  const ca = await readFile(s.caFile);
  const cn = (servername?: string) => new Promise<string>((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port: s.port, ca, rejectUnauthorized: false, ...(servername ? { servername } : {}) }, () => {
      const c = sock.getPeerCertificate();
      sock.end();
      resolve(String(c.subject.CN));
    });
    sock.on('error', reject);
  });
  t.equal(await cn('www.example.com'), 'wild');
  t.equal(await cn('api.example.com'), 'named');
  t.equal(await cn('localhost'), 'apiserver', 'unknown names get the default certificate');
  t.equal(await cn(), 'apiserver', 'no SNI gets the default certificate');
});
