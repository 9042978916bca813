/**
 * The loop the signing and approving controllers share (Kubernetes' CertificateController):
 * every CertificateSigningRequest added, changed or deleted queues its name; a worker takes the
 * cached object and hands a copy to the controller's handler, unless the request is gone or
 * already holds a certificate (nothing is left to do then).
 *
 * Contract: keys are names (CSRs are cluster-scoped); a handler that throws has its key retried
 * with the queue's per-key backoff; handlers get a private copy and may change it freely.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ControllerContext } from '../../controller-registry.js';
import { deletedObject, keyOf, WorkQueue } from '../../deps.js';
import { CERTIFICATES_V1, certificateOf } from './conditions.js';

/** Kubernetes runs five workers for each of these controllers. */
export const CSR_WORKERS = 5;

export async function runCertificateController(
  ctx: ControllerContext, name: string, workers: number, handle: (csr: KubeObject) => Promise<void>,
): Promise<void> {
  const queue = new WorkQueue({ name, log: ctx.log });
  const csrs = ctx.informers.informerFor(CERTIFICATES_V1);
  csrs.addEventHandler({
    onAdd: (o) => queue.add(keyOf(o)),
    onUpdate: (_old, o) => queue.add(keyOf(o)),
    onDelete: (x) => queue.add(keyOf(deletedObject(x))),
  });
  ctx.informers.start(ctx.signal);
  if (!(await csrs.waitForSync(ctx.signal))) return;
  await queue.runWorkers(workers, async (key) => {
    const csr = csrs.indexer.getByKey(key);
    if (!csr || certificateOf(csr)) return;
    await handle(structuredClone(csr));
  }, ctx.signal);
}
