// Who may reach the API server's operator pages (/logs/, /debug/pprof/, /api-docs-ui/) under
// the default RBAC policy: as in Kubernetes, only cluster-admin (nonResourceURLs "*") among the
// bootstrap ClusterRoles; system:discovery, system:basic-user, system:public-info-viewer and
// system:monitoring (what every user or a metrics scraper holds) do not.
import t from 'tap';
import { bootstrapPolicy } from '../../../../src/auth/authorizers/rbac/bootstrap/policy.js';
import { compileRules } from '../../../../src/auth/authorizers/rbac/policy-index.js';
import { ruleAllows } from '../../../../src/auth/authorizers/rbac/rule-match.js';

const PATHS = ['/logs', '/logs/', '/logs/server.log', '/debug/pprof/', '/debug/pprof/profile', '/debug/pprof/heap', '/api-docs-ui', '/api-docs-ui/', '/api-docs-ui/initializer.js'];

t.test('only cluster-admin gets the operator pages', async (t) => {
  const { clusterRoles } = bootstrapPolicy();
  for (const path of PATHS) {
    const holders = clusterRoles
      .filter((r) => compileRules(r).some((rule) => ruleAllows({ verb: 'get', isResourceRequest: false, path, apiGroup: '', resource: '', subresource: '', name: '' }, rule)))
      .map((r) => r.metadata?.name);
    t.same(holders, ['cluster-admin'], path);
  }
  const names = clusterRoles.map((r) => r.metadata?.name);
  for (const n of ['system:discovery', 'system:basic-user', 'system:public-info-viewer', 'system:monitoring']) t.ok(names.includes(n), `${n} exists (and was checked above)`);
});
