/** DELETE of one object and DELETECOLLECTION (DeleteOptions from the body or the query). */
import { ApiError, errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { decodeValue } from './codec-adapter.js';
import { readBody, writeObject } from './http-io.js';
import { parseListParams } from './read-handlers.js';
import { headerOf, outputFormat, parseDryRun, respondObject, servedApiVersion, toServed, type Scope } from './scope.js';
import type { DeleteOptions } from '../registry/resource-registry.js';
import { queryBool } from '../request-info.js';
import { admissionRequest } from './write-handlers.js';

type Obj = Record<string, unknown>;

function invalidOptions(field: string, message: string): ApiError {
  return new ApiError(422, 'Invalid', `DeleteOptions.meta.k8s.io "" is invalid: ${field}: ${message}`,
    { group: 'meta.k8s.io', kind: 'DeleteOptions', causes: [{ reason: 'FieldValueInvalid', message, field }] });
}

/** Reads DeleteOptions: body fields win over query parameters. */
export async function readDeleteOptions(s: Scope): Promise<DeleteOptions> {
  const body = await readBody(s.req);
  let b: Obj = {};
  if (body.length) {
    const v = decodeValue(headerOf(s.req, 'content-type'), body, 'DeleteOptions');
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) throw errors.badRequest('DeleteOptions must be an object');
    b = (v as Obj | undefined) ?? {};
    if (b.kind !== undefined && b.kind !== 'DeleteOptions') throw errors.badRequest(`expected DeleteOptions, got ${String(b.kind)}`);
  }
  const q = s.query;
  const opts: DeleteOptions = {};
  const grace = b.gracePeriodSeconds ?? (q.get('gracePeriodSeconds') !== null ? Number(q.get('gracePeriodSeconds')) : undefined);
  if (grace !== undefined && grace !== null) {
    if (typeof grace !== 'number' || !Number.isInteger(grace)) throw errors.badRequest(`gracePeriodSeconds: Invalid value: ${JSON.stringify(grace)}: must be an integer`);
    // Kubernetes treats a negative grace period as "use the default".
    if (grace >= 0) opts.gracePeriodSeconds = grace;
  }
  const policy = (b.propagationPolicy ?? q.get('propagationPolicy') ?? undefined) as string | undefined;
  const orphan = b.orphanDependents ?? (q.get('orphanDependents') !== null ? queryBool(q.get('orphanDependents')) : undefined);
  if (policy !== undefined && policy !== null && orphan !== undefined && orphan !== null) {
    throw invalidOptions('propagationPolicy', `Invalid value: ${JSON.stringify(policy)}: orphanDependents and deletionPropagation cannot be both set`);
  }
  if (policy !== undefined && policy !== null) {
    if (!['Orphan', 'Background', 'Foreground'].includes(policy)) throw invalidOptions('propagationPolicy', `Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"`);
    opts.propagationPolicy = policy as DeleteOptions['propagationPolicy'];
  } else if (orphan === true) opts.propagationPolicy = 'Orphan';
  else if (orphan === false) opts.propagationPolicy = 'Background';
  else if (s.def.orphanDependentsByDefaultIn?.includes(s.version)) opts.orphanByDefault = true;
  const pre = b.preconditions as Obj | undefined;
  if (pre && typeof pre === 'object') {
    opts.preconditions = {};
    if (typeof pre.uid === 'string' && pre.uid) opts.preconditions.uid = pre.uid;
    if (typeof pre.resourceVersion === 'string' && pre.resourceVersion) opts.preconditions.resourceVersion = pre.resourceVersion;
  }
  opts.dryRun = parseDryRun(q, b.dryRun);
  opts.request = admissionRequest(s);
  return opts;
}

export async function handleDelete(s: Scope): Promise<void> {
  if (s.subresource) throw errors.methodNotAllowed('DELETE', `${s.def.plural}/${s.subresource}`);
  const fmt = outputFormat(s);
  const opts = await readDeleteOptions(s);
  // Kubernetes answers with the object's last state, whether it is gone or only marked.
  const { object } = await s.registry.delete(s.def, s.namespace, s.name, opts);
  respondObject(s, 200, object, fmt);
}

export async function handleDeleteCollection(s: Scope, workers: number): Promise<void> {
  const fmt = outputFormat(s);
  const opts = await readDeleteOptions(s);
  const p = parseListParams(s);
  const list = await s.registry.list(s.def, { namespace: s.namespace, filter: p.filter });
  const queue = [...list.items];
  const deleted: KubeObject[] = [];
  const worker = async (): Promise<void> => {
    for (let o = queue.shift(); o; o = queue.shift()) {
      try {
        const r = await s.registry.delete(s.def, o.metadata?.namespace ?? '', o.metadata?.name ?? '', opts);
        deleted.push(r.object);
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, workers) }, worker));
  const items = deleted.map((o) => { const { kind: _k, apiVersion: _a, ...rest } = toServed(s, o); void _k; void _a; return rest; });
  writeObject(s.res, 200, { kind: s.def.listKind, apiVersion: servedApiVersion(s), metadata: { resourceVersion: list.resourceVersion }, items }, fmt.target === 'object' ? fmt : { mediaType: 'application/json', target: 'object' });
}

