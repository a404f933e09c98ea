import Stripe from 'stripe';
import type { Checks } from './types.js';

const stripeSdk = new Stripe('sk_test_only_used_to_reach_webhooks_helpers');

export const checks: Checks = {
  stripe: {
    sdk: 'stripe-node webhooks.constructEvent',
    verify: (d, secret) => stripeSdk.webhooks.constructEvent(d.text, d.headers['stripe-signature']!, secret),
  },
};
