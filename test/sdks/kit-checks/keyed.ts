import type { Checks } from './types.js';

// None: no official verifier of these senders is installed in test/sdks/node_modules. AWS SNS
// (sns-validator / the AWS SDKs' SNS message validators), PayPal (its SDKs verify through PayPal's
// verify-webhook-signature API), Plaid (its SDK fetches keys and verifies nothing), Discord
// (discord-interactions) and SendGrid (@sendgrid/eventwebhook) are not among them. The kit's
// deliveries of these senders are checked against onceonly's providers only
// (test/testing/deliveries.test.ts, test/testing/testKeys.test.ts).
export const checks: Checks = {};
