/**
 * The RBAC authorization mode's factory for the API server's mode registry
 * (src/daemons/apiserver/authorizer-modes.ts): the authorizer exists at once and answers from
 * the store's RBAC index once `start` has seen every RBAC resource listed.
 */
import type { Logger } from 'pino';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { rbacIndexFor } from './policy-index.js';
import { RbacAuthorizer } from './rbac-authorizer.js';

export interface RbacMode {
  readonly authorizer: RbacAuthorizer;
  start(store: ObjectStore): Promise<void>;
}

export function rbacMode(_config: unknown, log: Logger): RbacMode {
  const authorizer = new RbacAuthorizer();
  return {
    authorizer,
    async start(store: ObjectStore): Promise<void> {
      const index = rbacIndexFor(store, log);
      await index.ready;
      authorizer.attach(index);
      log.info('RBAC caches synced');
    },
  };
}
