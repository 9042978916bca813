/**
 * The CSR approving controller (Kubernetes' sarapprove): approves node agents' client
 * certificate requests when the requester may have them, asking the authorizer through a
 * SubjectAccessReview for the requester recorded in the CSR (spec.username, uid, groups, extra).
 *
 * A request is a node client request when its signer is kubernetes.io/kube-apiserver-client-kubelet
 * and it passes that signer's rules (O exactly system:nodes, CN system:node:<name>, no SANs,
 * usages digital signature + client auth, optionally key encipherment). Two permissions are
 * tried, in order, each only when it applies:
 *  - `create certificatesigningrequests/selfnodeclient` (certificates.k8s.io), when the CN is the
 *    requester's own user name (a node renewing its own certificate);
 *  - `create certificatesigningrequests/nodeclient`, for any node client request.
 * The first allowed one appends condition Approved (reason AutoApproved, Kubernetes' message)
 * through the approval subresource. Requests already approved or denied, already issued, or not
 * node client requests are left alone; a recognised request no review allows fails the sync so
 * that it is asked again with backoff, as in Kubernetes.
 */
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import type { ResourceRef, RestClient } from '../deps.js';
import { updateApproval } from './csr/approval.js';
import { CSR_WORKERS, runCertificateController } from './csr/certificate-controller.js';
import { APPROVED, approvalOf, withCondition } from './csr/conditions.js';
import { parseRequest, type ParsedRequest } from './csr/request.js';
import { KUBE_APISERVER_CLIENT_KUBELET, kubeletClientRule } from './csr/signer-rules.js';

const SUBJECT_ACCESS_REVIEWS: ResourceRef = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews' };

interface CsrSpec {
  signerName?: string;
  usages?: string[];
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface Recognizer {
  recognize(spec: CsrSpec, req: ParsedRequest): boolean;
  subresource: string;
  message: string;
}

function isNodeClient(spec: CsrSpec, req: ParsedRequest): boolean {
  return spec.signerName === KUBE_APISERVER_CLIENT_KUBELET && kubeletClientRule(req, spec.usages ?? []) === undefined;
}

const RECOGNIZERS: readonly Recognizer[] = [
  {
    recognize: (spec, req) => spec.username === req.commonName && isNodeClient(spec, req),
    subresource: 'selfnodeclient',
    message: 'Auto approving self kubelet client certificate after SubjectAccessReview.',
  },
  {
    recognize: isNodeClient,
    subresource: 'nodeclient',
    message: 'Auto approving kubelet client certificate after SubjectAccessReview.',
  },
];

/** The recognizers that apply to a request, in the order they are tried. */
export function applicableRecognizers(spec: CsrSpec, req: ParsedRequest): Recognizer[] {
  return RECOGNIZERS.filter((r) => r.recognize(spec, req));
}

export interface CsrApprovingOptions {
  /** Parallel workers. @default 5, as Kubernetes */
  workers?: number;
  /** The clock (ms since the epoch) that dates the Approved condition; Date.now by default. */
  now?: () => number;
}

export class CsrApprovingController implements Controller {
  readonly name = 'csrapproving';
  private readonly now: () => number;

  constructor(private readonly opts: CsrApprovingOptions = {}) { this.now = opts.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    await runCertificateController(ctx, this.name, this.opts.workers ?? CSR_WORKERS, (csr) => this.handle(ctx.client, csr));
  }

  private async handle(client: RestClient, csr: KubeObject): Promise<void> {
    const { approved, denied } = approvalOf(csr);
    if (approved || denied) return;
    const spec = (csr.spec ?? {}) as CsrSpec;
    const name = csr.metadata?.name ?? '';
    const req = await parseRequest(csr).catch((e: Error) => { throw new Error(`unable to parse csr "${name}": ${e.message}`); });
    const tried: string[] = [];
    for (const r of applicableRecognizers(spec, req)) {
      tried.push(r.subresource);
      if (!(await this.authorize(client, spec, r.subresource))) continue;
      await updateApproval(client, withCondition(csr, { type: APPROVED, reason: 'AutoApproved', message: r.message }, this.now()));
      return;
    }
    if (tried.length) throw new Error(`recognized csr "${name}" as [${tried.join(' ')}] but subject access review was not approved`);
  }

  /** Whether the CSR's requester may `create certificatesigningrequests/<subresource>`. */
  private async authorize(client: RestClient, spec: CsrSpec, subresource: string): Promise<boolean> {
    const review = await client.create(SUBJECT_ACCESS_REVIEWS, {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
      spec: {
        user: spec.username ?? '',
        ...(spec.uid ? { uid: spec.uid } : {}),
        groups: spec.groups ?? [],
        ...(spec.extra ? { extra: spec.extra } : {}),
        resourceAttributes: { group: 'certificates.k8s.io', resource: 'certificatesigningrequests', verb: 'create', subresource },
      },
    });
    return ((review.status ?? {}) as { allowed?: boolean }).allowed === true;
  }
}

export function newCsrApprovingController(opts: CsrApprovingOptions = {}): Controller {
  return new CsrApprovingController(opts);
}
