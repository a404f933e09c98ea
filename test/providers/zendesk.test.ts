import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { zendesk } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  rejectsBoth,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from './kit.js';

// Zendesk's documented algorithm
// (https://developer.zendesk.com/documentation/webhooks/verifying/): X-Zendesk-Webhook-Signature:
// base64(HMAC-SHA256(secret, timestamp + body)), X-Zendesk-Webhook-Signature-Timestamp an RFC 3339 time.
// Signed by the test kit; the offset-timestamp case by hand (the kit writes UTC).
const secret = () => randomBytes(30).toString('base64url');
const body = () =>
  `{"id": "01JQ8ZP6N6G0TQ3R2S1Q0P9N8M", "type": "zen:event-type:ticket.created", "time": "2026-11-30T05:00:00Z", "account_id": 1, "subject": "zen:ticket:1", "detail": {"id": "1", "subject": ${TRICKY_JSON}}, "event": {}}`;
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('zendesk', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('zendesk provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'zendesk',
    credential: oneSecret(secret),
    make: (config) => zendesk({ secret: config }),
    body,
    sign,
    expect: {
      dedup: 'id',
      id: '01JQ8ZP6N6G0TQ3R2S1Q0P9N8M',
      type: 'zen:event-type:ticket.created',
      typeSigned: true,
    },
    noteOf: (event) => (event as { detail: { subject: unknown } }).detail.subject,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'x-zendesk-webhook-signature',
    malformed: ['', ' '],
  });

  it('keys a trigger webhook (your own body, no id) on a digest of the body', async () => {
    const key = secret();
    const verified = await verifyAt(
      zendesk({ secret: key }),
      sign('{"ticket": "1", "status": "open"}', key, NOW),
    );
    assert.equal(verified.dedup, 'body');
  });

  it('accepts an offset timestamp, and refuses one that is not RFC 3339 as malformed_header', async () => {
    const key = secret();
    const payload = body();
    const offset = '2026-11-29T21:00:00-08:00'; // NOW in UTC-8
    const signed = createHmac('sha256', key)
      .update(offset + payload)
      .digest('base64');
    const d: Delivery = {
      body: payload,
      headers: { 'x-zendesk-webhook-signature': signed, 'x-zendesk-webhook-signature-timestamp': offset },
    };
    await verifyAt(zendesk({ secret: key }), d);
    for (const bad of [
      '1764478800',
      '2026-11-30 05:00',
      'Sun, 30 Nov 2026 05:00:00 GMT',
      '2026-11-30T05:00:00',
    ]) {
      await rejectsBoth(
        zendesk({ secret: key }),
        withHeader(d, 'x-zendesk-webhook-signature-timestamp', bad),
        'malformed_header',
      );
    }
  });

  it('refuses a delivery whose timestamp header was changed (it is signed)', async () => {
    const key = secret();
    const d = sign(body(), key, NOW);
    const shifted = rfc3339(new Date(NOW.getTime() + 1000));
    await rejectsBoth(
      zendesk({ secret: key }),
      withHeader(d, 'x-zendesk-webhook-signature-timestamp', shifted),
      'invalid_signature',
    );
  });

  it('defaults retention to 1 day', () => {
    assert.equal(zendesk({ secret: secret() }).retentionMs, 86_400_000);
  });
});
