/**
 * Test certificates: a throw-away CA, a server certificate for loopback and a client
 * certificate, written as PEM files into a directory the caller owns (and removes).
 * ECDSA P-256 keys in PKCS#8 PEM, which Node (OpenSSL), grpc-js and Go (etcd) all read.
 */
import { webcrypto } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import 'reflect-metadata'; // @peculiar/x509 needs the Reflect metadata API loaded first
import * as x509 from '@peculiar/x509';

export interface TestPki {
  readonly caFile: string;
  readonly caKeyFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

export interface TestPkiOptions {
  /** CA common name; default 'corectl-test-ca'. Use different names for "wrong CA" tests. */
  readonly caName?: string;
  /** Extra DNS names for the server certificate (127.0.0.1 and localhost are always in). */
  readonly serverDnsNames?: readonly string[];
  /** Extra IP addresses for the server certificate. */
  readonly serverIps?: readonly string[];
  /** Client certificate common name (the user name for x509 authentication); default 'corectl-test-client'. */
  readonly clientCommonName?: string;
  /** Client certificate organizations (the groups for x509 authentication). */
  readonly clientOrganizations?: readonly string[];
  /** Prefix of the written file names; default '' (files are ca.crt, server.crt ...). */
  readonly filePrefix?: string;
}

const algorithm: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const DAY_MS = 24 * 3600 * 1000;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type KeyPair = webcrypto.CryptoKeyPair;

async function generateKeys(): Promise<KeyPair> {
  return (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as KeyPair;
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** An escaped distinguished-name value: the characters that have meaning in DN strings get a backslash. */
function dnValue(v: string): string {
  return v.replace(/([,+="\\<>;#])/g, '\\$1');
}

function serial(): string {
  // Positive, non-zero 16-byte serial number in hex.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return Buffer.from(bytes).toString('hex');
}

/** Generates the CA, server and client pairs into `dir` and returns their paths. */
export async function makeTestPki(dir: string, opts: TestPkiOptions = {}): Promise<TestPki> {
  const prefix = opts.filePrefix ?? '';
  const notBefore = new Date(Date.now() - DAY_MS);
  const notAfter = new Date(Date.now() + 365 * DAY_MS);

  const caKeys = await generateKeys();
  const caName = `CN=${dnValue(opts.caName ?? 'corectl-test-ca')}`;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: caName,
    notBefore,
    notAfter,
    signingAlgorithm: algorithm,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  async function issue(subject: string, usages: x509.ExtendedKeyUsage[], san?: x509.JsonGeneralName[]) {
    const keys = await generateKeys();
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension(usages, false),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ];
    if (san) extensions.push(new x509.SubjectAlternativeNameExtension(san, false));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject,
      issuer: caCert.subject,
      notBefore,
      notAfter,
      signingAlgorithm: algorithm,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      extensions,
    });
    return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
  }

  const serverSan: x509.JsonGeneralName[] = [
    { type: 'dns', value: 'localhost' },
    ...(opts.serverDnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    { type: 'ip', value: '127.0.0.1' },
    ...(opts.serverIps ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  // The server pair also carries clientAuth so a server (etcd) can use it towards its peers.
  const server = await issue('CN=localhost', [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth], serverSan);
  const clientSubject = [
    ...(opts.clientOrganizations ?? []).map((o) => `O=${dnValue(o)}`),
    `CN=${dnValue(opts.clientCommonName ?? 'corectl-test-client')}`,
  ].join(', ');
  const client = await issue(clientSubject, [x509.ExtendedKeyUsage.clientAuth]);

  const files: TestPki = {
    caFile: join(dir, `${prefix}ca.crt`),
    caKeyFile: join(dir, `${prefix}ca.key`),
    serverCertFile: join(dir, `${prefix}server.crt`),
    serverKeyFile: join(dir, `${prefix}server.key`),
    clientCertFile: join(dir, `${prefix}client.crt`),
    clientKeyFile: join(dir, `${prefix}client.key`),
  };
  await Promise.all([
    writeFile(files.caFile, caCert.toString('pem') + '\n'),
    writeFile(files.caKeyFile, (await privateKeyPem(caKeys.privateKey)) + '\n', { mode: 0o600 }),
    writeFile(files.serverCertFile, server.certPem + '\n'),
    writeFile(files.serverKeyFile, server.keyPem + '\n', { mode: 0o600 }),
    writeFile(files.clientCertFile, client.certPem + '\n'),
    writeFile(files.clientKeyFile, client.keyPem + '\n', { mode: 0o600 }),
  ]);
  return files;
}
