/**
 * Wires the review handler into the REST layer: every review resource is registered with
 * `addResourceHandler` (so discovery lists it and its requests bypass the generic store);
 * the adapter reads and decodes the body (JSON, YAML or protobuf) and writes the reply in the
 * negotiated encoding.
 */
import { decodeBody } from '../../../api/codec/body.js';
import { queryBool } from '../request-info.js';
import { readBody, writeObject } from '../rest/http-io.js';
import { negotiateOutput } from '../rest/negotiate.js';
import type { RestApi, SubresourceHandler } from '../rest/rest-api.js';
import { headerOf } from '../rest/scope.js';
import type { ReviewHandler } from './review-handler.js';
import { reviewResources } from './review-resources.js';

/** The REST-layer handler for one review request. */
export function reviewRequestHandler(reviews: ReviewHandler): SubresourceHandler {
  return async (ctx, req, res) => {
    const raw = ctx.info.verb === 'create' ? await readBody(req) : Buffer.alloc(0);
    const body = raw.length ? decodeBody(headerOf(req, 'content-type'), raw) : undefined;
    const { status, object } = await reviews.serve(ctx, body);
    let fmt = negotiateOutput(headerOf(req, 'accept'), 'resource', { protobuf: true, pretty: queryBool(ctx.query.get('pretty')) === true });
    if (fmt.target !== 'object') fmt = { mediaType: 'application/json', target: 'object', pretty: fmt.pretty };
    writeObject(res, status, object, fmt);
  };
}

/** Registers every review resource with the REST layer. */
export function installReviewResources(rest: Pick<RestApi, 'addResourceHandler'>, reviews: ReviewHandler): void {
  const handler = reviewRequestHandler(reviews);
  for (const def of reviewResources) rest.addResourceHandler(def, handler);
}
