import { createHmac } from 'node:crypto';

/**
 * A `Stripe-Signature` header as Stripe signs a delivery: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>" keyed with the whole `whsec_` secret>`. The suites that only need a signed delivery
 * use this; test/sdks/stripe.test.ts checks the provider against the `stripe` package's own signer
 * and verifier.
 */
export function stripeSignature(body: string, secret: string, at = Math.floor(Date.now() / 1000)): string {
  return `t=${at},v1=${createHmac('sha256', secret).update(`${at}.${body}`).digest('hex')}`;
}
