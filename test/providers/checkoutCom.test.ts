import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { checkoutCom } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

// Checkout.com's documented algorithm
// (https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver):
// Cko-Signature: <hex HMAC-SHA256 of the raw body, keyed with the webhook's signature key>, signed
// by the test kit (onceonly/testing's signedDelivery).
const secret = () => randomUUID();
const body = () =>
  `{"id": "evt_az5sblvku4ge3dwpztvyizgcau", "type": "payment_approved", "created_on": "2026-11-30T05:00:00Z", "data": {"id": "pay_1", "description": ${TRICKY_JSON}}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('checkoutCom', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}

describe('checkoutCom provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'checkout-com',
    credential: oneSecret(secret),
    make: (config) => checkoutCom({ secret: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'evt_az5sblvku4ge3dwpztvyizgcau', type: 'payment_approved', typeSigned: true },
    noteOf: (event) => (event as { data: { description: unknown } }).data.description,
    toleranceMs: undefined,
    signatureHeader: 'cko-signature',
    malformed: ['sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e', 'pk_sbox_abc', 'sk_abc', ' '],
  });

  it('defaults retention to 2 days (eight resends over about 30 hours)', () => {
    assert.equal(checkoutCom({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
