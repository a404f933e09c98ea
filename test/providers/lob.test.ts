import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { lob } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

// Lob's documented algorithm (https://help.lob.com/print-and-mail/getting-data-and-results/using-webhooks,
// "Securing your webhooks"): Lob-Signature = hex(HMAC-SHA256(secret, timestamp + '.' + body)),
// Lob-Signature-Timestamp the send time in milliseconds. Signed by the test kit.
const secret = () => randomBytes(20).toString('hex');
const body = () =>
  `{"id": "evt_d95ff8ffd2b5cfb4", "object": "event", "event_type": {"id": "letter.delivered", "enabled_for_test": true, "resource": "letters"}, "body": {"id": "ltr_4868c3b754655f90", "description": ${TRICKY_JSON}}, "date_created": "2026-11-30T05:00:00.000Z"}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('lob', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('lob provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'lob',
    credential: oneSecret(secret),
    make: (config) => lob({ secret: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'evt_d95ff8ffd2b5cfb4', type: 'letter.delivered', typeSigned: true },
    noteOf: (event) => (event as { body: { description: unknown } }).body.description,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'lob-signature',
    malformed: ['test_0dc8d51e0acffcb1880e0f19c79b2f5b0cc', 'live_pub_abc', 'test_pub_abc', ' '],
  });

  it('defaults retention to 3 days', () => {
    assert.equal(lob({ secret: secret() }).retentionMs, 3 * 86_400_000);
  });
});
