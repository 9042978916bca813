/**
 * The Node authorizer (--authorization-mode=Node), as Kubernetes': requests from nodes
 * (`system:node:<name>` in `system:nodes`, see node-identity.ts) to Secrets, ConfigMaps,
 * PVCs, PVs, VolumeAttachments and service-account tokens are allowed only for objects related
 * to the node in the graph (graph.ts); node Leases and CSINodes only by the node's own name;
 * everything else by the static node rules (node-rules.ts). NodeRestriction admission narrows
 * the writes these rules allow (own Node, mirror pods, pod status, evictions) to the node's own
 * objects. Requests from anyone else get no opinion.
 *
 * Pods and Nodes are authorized by the static rules, as Kubernetes does without the
 * AuthorizeNodeWithSelectors gate: the request attributes carry no field selector, so a
 * list of pods scoped by spec.nodeName cannot be told from any other list.
 */
import type { Logger } from 'pino';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../authorizer.js';
import type { UserInfo } from '../../user.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { rulesAllow, type PolicyRule } from '../rbac/rule-match.js';
import { NodeGraph, type VertexKind } from './graph.js';
import { populateGraph, type GraphPopulator } from './graph-populator.js';
import { nodeIdentity } from './node-identity.js';
import { nodeRules } from './node-rules.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

const ALLOW: AuthorizationResult = { decision: 'allow', reason: '' };
const NO_OPINION: AuthorizationResult = { decision: 'noOpinion', reason: '' };
const noOpinion = (reason: string): AuthorizationResult => ({ decision: 'noOpinion', reason });

/** `<group>/<resource>` → how requests to it are decided. */
type Check = (node: string, a: AuthorizationAttributes) => AuthorizationResult | Promise<AuthorizationResult>;

/**
 * How long a node's request for an object its graph does not (yet) relate to it waits for the
 * graph to catch up. The graph follows the store through watches, so a pod bound a moment ago
 * may not be in it when its node agent asks for the pod's Secret: without the wait that first
 * read is refused and retried. A request for an unrelated object is refused after the wait.
 */
const GRAPH_CATCH_UP_MS = 500;
const GRAPH_POLL_MS = 20;

export class NodeAuthorizer implements Authorizer {
  readonly name = 'Node';
  private readonly checks: ReadonlyMap<string, Check>;

  constructor(readonly graph: NodeGraph, private readonly rules: readonly PolicyRule[] = nodeRules(), private readonly catchUpMs = GRAPH_CATCH_UP_MS) {
    this.checks = new Map<string, Check>([
      ['/secrets', (n, a) => this.readNamespaced(n, 'secret', a)],
      ['/configmaps', (n, a) => this.readNamespaced(n, 'configmap', a)],
      ['/persistentvolumeclaims', (n, a) => (a.subresource === 'status' ? this.statusUpdate(n, 'pvc', a) : this.get(n, 'pvc', a))],
      ['/persistentvolumes', (n, a) => this.get(n, 'pv', a)],
      ['storage.k8s.io/volumeattachments', (n, a) => this.get(n, 'volumeattachment', a)],
      ['/serviceaccounts', (n, a) => this.createToken(n, a)],
      ['coordination.k8s.io/leases', (n, a) => this.lease(n, a)],
      ['storage.k8s.io/csinodes', (n, a) => this.csiNode(n, a)],
    ]);
  }

  /**
   * The RuleResolver capability (SelfSubjectRulesReview, kubectl auth can-i --list), as
   * Kubernetes' node authorizer answers: a node's rules depend on the graph and are not
   * enumerated (incomplete, with Kubernetes' message); anyone else gets nothing from this mode,
   * completely.
   */
  async rulesFor(user: UserInfo, _namespace: string): Promise<{ resourceRules: []; nonResourceRules: []; incomplete: boolean; evaluationError?: string }> {
    if (nodeIdentity(user).isNode) return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'node authorizer does not support user rule resolution' };
    return { resourceRules: [], nonResourceRules: [], incomplete: false };
  }

  authorize(a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    const id = nodeIdentity(a.user);
    if (!id.isNode) return NO_OPINION;
    if (!id.nodeName) return noOpinion(`unknown node for user "${a.user.name}"`);
    if (a.isResourceRequest) {
      const check = this.checks.get(`${a.apiGroup}/${a.resource}`);
      if (check) return check(id.nodeName, a);
    }
    return rulesAllow(a, this.rules) ? ALLOW : NO_OPINION;
  }

  private statusUpdate(node: string, kind: VertexKind, a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    if (a.verb !== 'update' && a.verb !== 'patch') return noOpinion('can only get/update/patch this type');
    if (a.subresource !== 'status') return noOpinion('can only update status subresource');
    return this.related(node, kind, a);
  }

  private get(node: string, kind: VertexKind, a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    if (a.verb !== 'get') return noOpinion('can only get individual resources of this type');
    if (a.subresource) return noOpinion('cannot get subresource');
    return this.related(node, kind, a);
  }

  /** get, list and watch of one named object (a list or watch pinned by metadata.name). */
  private readNamespaced(node: string, kind: VertexKind, a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    if (a.verb !== 'get' && a.verb !== 'list' && a.verb !== 'watch') return noOpinion('can only read resources of this type');
    if (a.subresource) return noOpinion('cannot read subresource');
    if (!a.namespace) return noOpinion('can only read namespaced object of this type');
    return this.related(node, kind, a);
  }

  private related(node: string, kind: VertexKind, a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    if (!a.name) return noOpinion('No Object name found');
    return this.pathOrWait(node, kind, a.namespace, a.name);
  }

  private createToken(node: string, a: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    if (a.verb !== 'create' || !a.name) return noOpinion('can only create tokens for individual service accounts');
    if (a.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
    return this.pathOrWait(node, 'serviceAccount', a.namespace, a.name);
  }

  /** Allowed at once when the graph relates the object to the node, else after the graph caught up (GRAPH_CATCH_UP_MS). */
  private pathOrWait(node: string, kind: VertexKind, namespace: string, name: string): AuthorizationResult | Promise<AuthorizationResult> {
    if (this.graph.hasPath(node, kind, namespace, name)) return ALLOW;
    if (this.catchUpMs <= 0) return noOpinion(`no relationship found between node '${node}' and this object`);
    return (async () => {
      for (let waited = 0; waited < this.catchUpMs; waited += GRAPH_POLL_MS) {
        await new Promise((r) => setTimeout(r, GRAPH_POLL_MS));
        if (this.graph.hasPath(node, kind, namespace, name)) return ALLOW;
      }
      return noOpinion(`no relationship found between node '${node}' and this object`);
    })();
  }

  private lease(node: string, a: AuthorizationAttributes): AuthorizationResult {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(a.verb)) return noOpinion('can only get, create, update, patch, or delete a node lease');
    if (a.namespace !== NODE_LEASE_NAMESPACE) return noOpinion(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
    // The name of a create is in the body, which NodeRestriction checks.
    if (a.verb !== 'create' && a.name !== node) return noOpinion('can only access node lease with the same name as the requesting node');
    return ALLOW;
  }

  private csiNode(node: string, a: AuthorizationAttributes): AuthorizationResult {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(a.verb)) return noOpinion('can only get, create, update, patch, or delete a CSINode');
    if (a.subresource) return noOpinion('cannot authorize CSINode subresources');
    if (a.verb !== 'create' && a.name !== node) return noOpinion('can only access CSINode with the same name as the requesting node');
    return ALLOW;
  }
}

export interface NodeAuthorizerMode {
  readonly authorizer: NodeAuthorizer;
  /** Fills the graph from the store; resolves once pods, volumes and attachments were listed. */
  start(store: ObjectStore): Promise<void>;
  stop(): void;
}

/** The --authorization-mode=Node mode (an AuthorizerMode of the API server). */
export function nodeAuthorizerMode(log: Logger): NodeAuthorizerMode {
  const graph = new NodeGraph();
  let populator: GraphPopulator | undefined;
  return {
    authorizer: new NodeAuthorizer(graph),
    async start(store: ObjectStore): Promise<void> {
      populator = populateGraph(graph, store, log);
      await populator.synced;
    },
    stop(): void {
      populator?.stop();
    },
  };
}
