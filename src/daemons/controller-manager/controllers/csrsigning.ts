/**
 * The CSR signing controller: issues certificates from the cluster CA for approved requests to
 * the built-in signers kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet,
 * kubelet-serving and (requests made through v1beta1) legacy-unknown. csr/authority.ts holds the
 * signing policy, csr/signer-rules.ts what each signer accepts.
 *
 * A request is handled when it is Approved, not Denied, not Failed, has no certificate yet and
 * names one of those signers. When it breaks its signer's rules it gets a Failed condition
 * (reason SignerValidationFailure, the broken rule as message); otherwise status.certificate is
 * set to the issued PEM. Both are written with an update of the status subresource carrying the
 * cached resourceVersion (a 409 retries the key with backoff). A request that does not parse, or
 * whose signature does not verify, is retried with backoff, as in Kubernetes.
 *
 * The CA comes from --cluster-signing-cert-file and --cluster-signing-key-file. When either file
 * does not exist the controller logs one line and does not run (Kubernetes does the same for its
 * default paths); an unreadable or unusable pair fails `run` with a line naming the options.
 * The TTL is --experimental-cluster-signing-duration, or spec.expirationSeconds when shorter.
 *
 * Decision: the CA is read once at start; Kubernetes also reloads it when the files change.
 */
import { access } from 'node:fs/promises';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import type { RestClient } from '../deps.js';
import { certificateTtl, SigningAuthority } from './csr/authority.js';
import { CSR_WORKERS, runCertificateController } from './csr/certificate-controller.js';
import { CERTIFICATES_V1, FAILED, hasTrueCondition, isApproved, withCondition } from './csr/conditions.js';
import { parseRequest } from './csr/request.js';
import { ruleFor } from './csr/signer-rules.js';

export interface CsrSigningOptions {
  /** The clock (ms since the epoch) certificates are dated by; Date.now by default. */
  now?: () => number;
}

interface CsrSpec { signerName?: string; usages?: string[]; expirationSeconds?: number }

/** The first of the two files that does not exist, if any. */
async function missingFile(files: readonly string[]): Promise<string | undefined> {
  for (const f of files) {
    try { await access(f); } catch (e) { if ((e as NodeJS.ErrnoException).code === 'ENOENT') return f; }
  }
  return undefined;
}

export class CsrSigningController implements Controller {
  readonly name = 'csrsigning';
  private readonly now: () => number;

  constructor(opts: CsrSigningOptions = {}) { this.now = opts.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    const { clusterSigningCertFile: certFile, clusterSigningKeyFile: keyFile } = ctx.config;
    const missing = await missingFile([certFile, keyFile]);
    if (missing) {
      ctx.log.info({ file: missing }, `skipping the CSR signing controller because ${missing} does not exist`);
      return;
    }
    const authority = await SigningAuthority.load(certFile, keyFile);
    const ttl = ctx.config.experimentalClusterSigningDuration;
    await runCertificateController(ctx, this.name, CSR_WORKERS, (csr) => this.handle(ctx.client, authority, ttl, csr));
  }

  private async handle(client: RestClient, authority: SigningAuthority, configuredTtl: number, csr: KubeObject): Promise<void> {
    if (!isApproved(csr) || hasTrueCondition(csr, FAILED)) return;
    const spec = (csr.spec ?? {}) as CsrSpec;
    const rule = ruleFor(spec.signerName ?? '');
    if (!rule) return;
    const name = csr.metadata?.name ?? '';
    const req = await parseRequest(csr).catch((e: Error) => { throw new Error(`unable to parse csr "${name}": ${e.message}`); });
    const usages = spec.usages ?? [];
    const broken = rule(req, usages);
    if (broken) {
      await client.update(CERTIFICATES_V1, withCondition(csr, { type: FAILED, reason: 'SignerValidationFailure', message: broken }, this.now()), { subresource: 'status' });
      return;
    }
    const pem = await authority.sign(req, usages, certificateTtl(configuredTtl, spec.expirationSeconds), this.now());
    const status = { ...((csr.status ?? {}) as Record<string, unknown>), certificate: Buffer.from(pem).toString('base64') };
    await client.update(CERTIFICATES_V1, { ...csr, status }, { subresource: 'status' });
  }
}

export function newCsrSigningController(opts: CsrSigningOptions = {}): Controller {
  return new CsrSigningController(opts);
}
