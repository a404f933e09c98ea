import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { calendly } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

// Calendly's documented algorithm
// (https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures):
// Calendly-Webhook-Signature: t=<seconds>,v1=<hex HMAC-SHA256 of `t.body`>, signed by the test kit.
const secret = () => randomBytes(32).toString('hex');
const body = () =>
  `{"created_at": "2026-11-30T05:00:00.000000Z", "created_by": "https://api.calendly.com/users/AAA", "event": "invitee.created", "payload": {"name": ${TRICKY_JSON}, "uri": "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAA"}}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('calendly', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('calendly provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'calendly',
    credential: oneSecret(secret),
    make: (config) => calendly({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', type: 'invitee.created', typeSigned: true },
    noteOf: (event) => (event as { payload: { name: unknown } }).payload.name,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'calendly-webhook-signature',
    malformed: [
      'eyJraWQiOiIxY2UxZTEzNjE3ZGNmNzY2YjNjZWJjY2Y4ZGM1YmFmYThhNjVlNjg0MDIzZjdjMzJiZTgzNDliMjM4MDEzNWI0IiwidHlwIjoiUEFUIiwiYWxnIjoiRVMyNTYifQ',
      ' ',
    ],
  });

  it('defaults retention to 2 days', () => {
    assert.equal(calendly({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
