import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import Razorpay from 'razorpay';
import { razorpay } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from '../providers/kit.js';

// Signed by the test kit (signedDelivery), which signs with Razorpay's documented algorithm
// (https://razorpay.com/docs/webhooks/validate-test/): X-Razorpay-Signature: <hex HMAC-SHA256 of the
// raw body>; checked below against the SDK's own Razorpay.validateWebhookSignature (the razorpay
// package offers no signing helper).
const secret = () => randomBytes(16).toString('base64url');
const body = () =>
  `{"entity": "event", "account_id": "acc_BFQ7uQEaa7j2z7", "event": "payment.captured", "contains": ["payment"], "payload": {"payment": {"entity": {"id": "pay_DESlfW9H8K9uqM", "description": ${TRICKY_JSON}}}}, "created_at": 1764478800}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('razorpay', { payload, secret: key, at: NOW, id: 'NuXFYbOaUksQGe' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('razorpay provider (signed by the test kit, agreed by the razorpay SDK)', () => {
  providerCases<string>({
    name: 'razorpay',
    credential: oneSecret(secret),
    make: (config) => razorpay({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', id: 'NuXFYbOaUksQGe', type: 'payment.captured', typeSigned: true },
    noteOf: (event) =>
      (event as { payload: { payment: { entity: { description: unknown } } } }).payload.payment.entity
        .description,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'x-razorpay-event-id', 'FreshEventId01'),
    signatureHeader: 'x-razorpay-signature',
    malformed: ['rzp_live_ILgsfZCZoFIKMb', 'rzp_test_ILgsfZCZoFIKMb', ' '],
  });

  it("agrees with the razorpay SDK's validateWebhookSignature, accepting and refusing alike", async () => {
    const key = secret();
    const d = sign(body(), key);
    const signature = d.headers['x-razorpay-signature']!;
    assert.equal(Razorpay.validateWebhookSignature(d.body as string, signature, key), true);
    await verifyAt(razorpay({ secret: key }), d);
    const tampered = (d.body as string).replace('caf', 'cof');
    assert.equal(Razorpay.validateWebhookSignature(tampered, signature, key), false);
    await assert.rejects(
      verifyAt(razorpay({ secret: key }), { ...d, body: tampered }),
      /no razorpay signature/,
    );
  });

  it('defaults retention to 2 days (retries over 24 hours)', () => {
    assert.equal(razorpay({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
