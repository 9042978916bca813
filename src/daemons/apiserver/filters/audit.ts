/**
 * Audit: a hook that sees each request after authentication and its outcome. A no-op until the
 * audit backends (--audit-log-path, webhook) land; the position in the chain is what matters.
 */
import type { RequestContext } from '../context.js';
import type { Exchange, Filter } from './filter.js';

export interface AuditSink {
  requestReceived(ctx: RequestContext): void;
  responseComplete(ctx: RequestContext, code: number): void;
}

export function audit(sink?: AuditSink): Filter {
  return {
    name: 'audit',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      return sink ? withSink(sink, x, next) : next();
    },
  };
}

async function withSink(sink: AuditSink, x: Exchange, next: () => Promise<void>): Promise<void> {
  sink.requestReceived(x.ctx);
  try {
    await next();
  } finally {
    sink.responseComplete(x.ctx, x.res?.statusCode ?? 101);
  }
}
