/**
 * The body-HMAC senders (b) whose own verifier is installed: Razorpay's SDK, Shopify's (its HMAC
 * helper and the headers its `webhooks.validate` requires: that call is async, so it runs over the
 * kit's deliveries in test/sdks/shopify.test.ts), and Netlify's documented check with jsonwebtoken.
 * Notion's `verifyWebhookSignature` is async too: test/sdks/notion.test.ts.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { ShopifyHeader } from '@shopify/shopify-api';
import { getHmac } from '@shopify/shopify-api/test-helpers';
import Razorpay from 'razorpay';
import type { Checks } from './types.js';

// jsonwebtoken ships no types (a devDependency of this workspace; no @types package here): the one call Netlify's docs make.
const jwt = createRequire(import.meta.url)('jsonwebtoken') as {
  verify(token: string, secret: string, options: { issuer: string; algorithms: string[] }): unknown;
};

/** The headers @shopify/shopify-api's webhooks.validate refuses a delivery without. */
const SHOPIFY_REQUIRED = [
  ShopifyHeader.Topic,
  ShopifyHeader.Domain,
  ShopifyHeader.ApiVersion,
  ShopifyHeader.WebhookId,
].map((name) => name.toLowerCase());

export const checks: Checks = {
  razorpay: {
    sdk: 'razorpay Razorpay.validateWebhookSignature',
    verify: (d, secret) =>
      Razorpay.validateWebhookSignature(d.text, d.headers['x-razorpay-signature']!, secret),
  },
  shopify: {
    sdk: '@shopify/shopify-api getHmac, and the headers webhooks.validate requires',
    verify: (d, secret) => {
      const missing = SHOPIFY_REQUIRED.filter((name) => !d.headers[name]);
      if (missing.length > 0) throw new Error(`webhooks.validate would miss ${missing.join(', ')}`);
      return getHmac(d.text, secret) === d.headers['x-shopify-hmac-sha256'];
    },
  },
  netlify: {
    sdk: "jsonwebtoken verify (Netlify's documented check: issuer netlify, HS256, the body's sha256)",
    verify: (d, secret) => {
      const claims = jwt.verify(d.headers['x-webhook-signature']!, secret, {
        issuer: 'netlify',
        algorithms: ['HS256'],
      }) as { sha256?: unknown };
      return claims.sha256 === createHash('sha256').update(d.body).digest('hex');
    },
  },
};
