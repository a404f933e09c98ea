import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { airtable } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, rejectsBoth, TRICKY_JSON, withHeader } from './kit.js';

// Airtable's documented algorithm (https://airtable.com/developers/web/api/webhooks-overview,
// "Webhook notification delivery"): X-Airtable-Content-MAC: hmac-sha256=<hex HMAC-SHA256 of the
// raw body, keyed with the base64-decoded macSecretBase64>; signed by the test kit
// (onceonly/testing's signedDelivery), the wrongly keyed MAC below by hand.
const secret = () => randomBytes(64).toString('base64');
// A real notification carries no text; the note rides along so the shared cases can read it back.
const body = () =>
  `{"base": {"id": "appABC123"}, "webhook": {"id": "achXYZ789"}, "timestamp": "2026-11-30T05:00:00.000Z", "note": ${TRICKY_JSON}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('airtable', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}

describe('airtable provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'airtable',
    credential: oneSecret(secret),
    make: (config) => airtable({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', typeSigned: false },
    noteOf: (event) => (event as { note: unknown }).note,
    toleranceMs: undefined,
    signatureHeader: 'x-airtable-content-mac',
    malformed: ['patAbCdEfGhIjKlMn.0123456789abcdef', '***not base64***', ' '],
  });

  it('refuses a MAC keyed with the secret text instead of its decoded bytes', async () => {
    const key = secret();
    const wrong = `hmac-sha256=${createHmac('sha256', key).update(body()).digest('hex')}`;
    await rejectsBoth(
      airtable({ secret: key }),
      withHeader(sign(body(), key), 'x-airtable-content-mac', wrong),
      'invalid_signature',
    );
  });

  it('defaults retention to 1 day', () => {
    assert.equal(airtable({ secret: secret() }).retentionMs, 86_400_000);
  });
});
