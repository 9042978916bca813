/**
 * The review kinds: "virtual" resources that are only ever created (POST) and never stored.
 * Declared so discovery lists them (kubectl checks discovery before `auth can-i`) and so the
 * REST layer can route their requests to the review handler instead of the generic store.
 */
import type { ResourceDefinition } from '../../../api/resources/types.js';

export const AUTHORIZATION_GROUP = 'authorization.k8s.io';
export const AUTHENTICATION_GROUP = 'authentication.k8s.io';

function review(group: string, kind: string, plural: string, namespaced: boolean): ResourceDefinition {
  return {
    group, versions: ['v1'], storageVersion: 'v1', kind, listKind: `${kind}List`, plural,
    singular: kind.toLowerCase(), namespaced, verbs: ['create'], tableColumns: [],
  };
}

export const selfSubjectAccessReviews = review(AUTHORIZATION_GROUP, 'SelfSubjectAccessReview', 'selfsubjectaccessreviews', false);
export const selfSubjectRulesReviews = review(AUTHORIZATION_GROUP, 'SelfSubjectRulesReview', 'selfsubjectrulesreviews', false);
export const subjectAccessReviews = review(AUTHORIZATION_GROUP, 'SubjectAccessReview', 'subjectaccessreviews', false);
export const localSubjectAccessReviews = review(AUTHORIZATION_GROUP, 'LocalSubjectAccessReview', 'localsubjectaccessreviews', true);
export const tokenReviews = review(AUTHENTICATION_GROUP, 'TokenReview', 'tokenreviews', false);
export const selfSubjectReviews = review(AUTHENTICATION_GROUP, 'SelfSubjectReview', 'selfsubjectreviews', false);

/** Every review resource, in the order discovery lists them within their group. */
export const reviewResources: readonly ResourceDefinition[] = [
  localSubjectAccessReviews, selfSubjectAccessReviews, selfSubjectRulesReviews, subjectAccessReviews,
  selfSubjectReviews, tokenReviews,
];
