import { Signature } from '@hubspot/api-client';
import Mux from '@mux/mux-node';
import { WebhooksManager } from 'box-node-sdk/managers/webhooks';
import Stripe from 'stripe';
import { providerOptions, testSecret } from '../../../src/testing/index.js';
import type { Checks } from './types.js';

const stripeSdk = new Stripe('sk_test_only_used_to_reach_webhooks_helpers');
const muxSdk = new Mux({ tokenId: 'only-used-to-reach', tokenSecret: 'the-webhooks-helpers' });

export const checks: Checks = {
  stripe: {
    sdk: 'stripe-node webhooks.constructEvent',
    verify: (d, secret) => stripeSdk.webhooks.constructEvent(d.text, d.headers['stripe-signature']!, secret),
  },
  box: {
    sdk: 'box-node-sdk WebhooksManager.validateMessage (each signature header under its own key)',
    verify: async (d, secret) => {
      const [primary, secondary] = providerOptions('box', { secret }).secret as [string, string];
      const headers = { ...d.headers };
      // The primary header under the primary key alone, then the secondary under the secondary
      // key with a primary key that does not match: both must verify.
      const byPrimary = await WebhooksManager.validateMessage(d.text, headers, primary);
      const bySecondary = await WebhooksManager.validateMessage(d.text, headers, testSecret('box'), {
        secondaryKey: secondary,
      });
      return byPrimary && bySecondary;
    },
  },
  hubspot: {
    sdk: '@hubspot/api-client Signature.isValid (v3, and v1)',
    verify: (d, secret) =>
      Signature.isValid({
        signatureVersion: 'v3',
        method: 'POST',
        signature: d.headers['x-hubspot-signature-v3']!,
        clientSecret: secret,
        requestBody: d.text,
        url: d.url,
        timestamp: Number(d.headers['x-hubspot-request-timestamp']),
      }) &&
      Signature.isValid({
        signatureVersion: 'v1',
        signature: d.headers['x-hubspot-signature']!,
        clientSecret: secret,
        requestBody: d.text,
      }),
  },
  mux: {
    sdk: '@mux/mux-node webhooks.unwrap',
    verify: (d, secret) => muxSdk.webhooks.unwrap(d.text, { ...d.headers }, secret),
  },
};
