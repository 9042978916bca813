/**
 * Kubernetes Status errors: the one catalogue of API failures. Every handler throws ApiError;
 * the REST layer writes `error.status` in the negotiated encoding with `error.status.code`.
 * Messages copy Kubernetes' wording where clients match on it.
 */

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { resourceVersion?: string; continue?: string };
  status: 'Success' | 'Failure';
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code: number;
}

export type StatusReason =
  | 'BadRequest' | 'Unauthorized' | 'Forbidden' | 'NotFound' | 'AlreadyExists' | 'Conflict'
  | 'Gone' | 'Expired' | 'Invalid' | 'MethodNotAllowed' | 'NotAcceptable' | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge' | 'TooManyRequests' | 'InternalError' | 'ServerTimeout' | 'Timeout'
  | 'ServiceUnavailable' | 'NonZeroExitCode' | '';

/** Identifies the object an error is about: resource is the plural ("pods"), group '' for core. */
export interface Qualified {
  group?: string;
  resource: string;
  name?: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: Status;
  /** Extra response headers (Retry-After for 429). */
  readonly headers: Record<string, string>;

  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails,
    headers: Record<string, string> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
    if (details && Object.keys(details).length) this.status.details = details;
    this.headers = headers;
  }

  get code(): number { return this.status.code; }
  get reason(): StatusReason { return this.status.reason ?? ''; }
}

export function isApiError(e: unknown, reason?: StatusReason): e is ApiError {
  return e instanceof ApiError && (reason === undefined || e.reason === reason);
}

function qualifiedResource(q: Qualified): string {
  return q.group ? `${q.resource}.${q.group}` : q.resource;
}

function detailsOf(q: Qualified): StatusDetails {
  const d: StatusDetails = { kind: q.resource };
  if (q.name !== undefined) d.name = q.name;
  // Go leaves an empty group out (omitempty): audit events and every encoding see the same details.
  if (q.group) d.group = q.group;
  return d;
}

export const errors = {
  notFound(q: Qualified): ApiError {
    return new ApiError(404, 'NotFound', `${qualifiedResource(q)} "${q.name ?? ''}" not found`, detailsOf(q));
  },
  alreadyExists(q: Qualified): ApiError {
    return new ApiError(409, 'AlreadyExists', `${qualifiedResource(q)} "${q.name ?? ''}" already exists`, detailsOf(q));
  },
  /** Optimistic-concurrency failure; the message is the one clients and tests look for. */
  conflict(q: Qualified, why = 'the object has been modified; please apply your changes to the latest version and try again'): ApiError {
    return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(q)} "${q.name ?? ''}": ${why}`, detailsOf(q));
  },
  /** Validation failure: `<Kind> "<name>" is invalid: <field>: <msg>, ...` with one cause per field error. */
  invalid(kind: string, group: string, name: string, causes: Array<{ field: string; type: FieldErrorType; message: string }>): ApiError {
    const list = causes.map((c) => `${c.field}: ${c.message}`);
    const summary = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
    return new ApiError(422, 'Invalid', `${kind}${group ? '.' + group : ''} "${name}" is invalid: ${summary}`, {
      name, group, kind,
      causes: causes.map((c) => ({ reason: c.type, message: c.message, field: c.field })),
    });
  },
  badRequest(message: string, causes?: StatusCause[]): ApiError {
    return new ApiError(400, 'BadRequest', message, causes?.length ? { causes } : undefined);
  },
  unauthorized(message = 'Unauthorized'): ApiError {
    return new ApiError(401, 'Unauthorized', message);
  },
  forbidden(q: Qualified, user: string, verb: string, why = ''): ApiError {
    const ns = '';
    return new ApiError(403, 'Forbidden',
      `${qualifiedResource(q)}${q.name ? ` "${q.name}"` : ''} is forbidden: User "${user}" cannot ${verb} resource "${q.resource}" in API group "${q.group ?? ''}"${ns}${why ? ': ' + why : ''}`,
      detailsOf(q));
  },
  /** A request an admission plugin refused: `<resource> "<name>" is forbidden: <why>`. */
  admissionForbidden(q: Qualified, why: string): ApiError {
    return new ApiError(403, 'Forbidden', `${qualifiedResource(q)}${q.name ? ` "${q.name}"` : ''} is forbidden: ${why}`, detailsOf(q));
  },
  methodNotAllowed(method: string, what: string): ApiError {
    return new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`, { kind: what },
      {}, { cause: method });
  },
  notAcceptable(accept: string, supported: string[]): ApiError {
    return new ApiError(406, 'NotAcceptable', `only the following media types are accepted: ${supported.join(', ')}`, undefined, {}, { cause: accept });
  },
  unsupportedMediaType(contentType: string): ApiError {
    return new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`, undefined, {}, { cause: contentType });
  },
  tooLarge(limitBytes: number): ApiError {
    return new ApiError(413, 'RequestEntityTooLarge', `the request body is too large: limit is ${limitBytes} bytes`);
  },
  /** An expired resourceVersion or continue token (410). */
  expired(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  },
  gone(message: string): ApiError {
    return new ApiError(410, 'Gone', message);
  },
  tooManyRequests(retryAfterSeconds = 1, message = 'Too many requests, please try again later.'): ApiError {
    return new ApiError(429, 'TooManyRequests', message, { retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) });
  },
  timeout(message = 'Timeout: request did not complete within the allotted timeout'): ApiError {
    return new ApiError(504, 'Timeout', message, { retryAfterSeconds: 1 });
  },
  serverTimeout(q: Qualified, verb: string, retryAfterSeconds = 2): ApiError {
    return new ApiError(500, 'ServerTimeout', `The ${verb} operation against ${qualifiedResource(q)} could not be completed at this time, please try again.`,
      { ...detailsOf(q), retryAfterSeconds });
  },
  unavailable(message: string): ApiError {
    return new ApiError(503, 'ServiceUnavailable', message);
  },
  internal(message: string, cause?: unknown): ApiError {
    return new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] }, {}, { cause });
  },
};

/** Field error types, as Kubernetes names them in Status causes. */
export type FieldErrorType =
  | 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueNotSupported' | 'FieldValueDuplicate'
  | 'FieldValueForbidden' | 'FieldValueTooLong' | 'FieldValueTooMany' | 'FieldValueTypeInvalid'
  | 'FieldValueNotFound' | 'InternalError';

export interface FieldError {
  field: string;
  type: FieldErrorType;
  message: string;
}

/** Field-error builders with Kubernetes' wording. */
export const fieldErrors = {
  required: (field: string, detail = ''): FieldError => ({ field, type: 'FieldValueRequired', message: detail ? `Required value: ${detail}` : 'Required value' }),
  invalid: (field: string, value: unknown, detail: string): FieldError => ({ field, type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${detail}` }),
  notSupported: (field: string, value: unknown, valid: string[]): FieldError => ({ field, type: 'FieldValueNotSupported', message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${valid.map((v) => `"${v}"`).join(', ')}` }),
  duplicate: (field: string, value: unknown): FieldError => ({ field, type: 'FieldValueDuplicate', message: `Duplicate value: ${JSON.stringify(value)}` }),
  forbidden: (field: string, detail: string): FieldError => ({ field, type: 'FieldValueForbidden', message: `Forbidden: ${detail}` }),
  tooLong: (field: string, max: number): FieldError => ({ field, type: 'FieldValueTooLong', message: `Too long: may not be more than ${max} bytes` }),
  typeInvalid: (field: string, value: unknown, detail: string): FieldError => ({ field, type: 'FieldValueTypeInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${detail}` }),
};
