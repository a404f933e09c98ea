import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { calCom } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

// Cal.com's documented algorithm (https://cal.com/docs/developing/guides/automation/webhooks,
// "Verifying the authenticity"): X-Cal-Signature-256: <hex HMAC-SHA256 of the raw body>, signed by
// the test kit (onceonly/testing's signedDelivery).
const secret = () => randomBytes(24).toString('hex');
const body = () =>
  `{"triggerEvent": "BOOKING_CREATED", "createdAt": "2026-11-30T05:00:00.000Z", "payload": {"title": ${TRICKY_JSON}, "uid": "bk_1"}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('calCom', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}

describe('calCom provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'calcom',
    credential: oneSecret(secret),
    make: (config) => calCom({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', type: 'BOOKING_CREATED', typeSigned: true },
    noteOf: (event) => (event as { payload: { title: unknown } }).payload.title,
    toleranceMs: undefined,
    signatureHeader: 'x-cal-signature-256',
    malformed: ['cal_live_0123456789abcdef', 'cal_test_abc', ' '],
  });

  it('defaults retention to 1 day', () => {
    assert.equal(calCom({ secret: secret() }).retentionMs, 86_400_000);
  });
});
