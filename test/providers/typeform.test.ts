import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { typeform } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, rejectsBoth, TRICKY_JSON, withHeader } from './kit.js';

// Signed by the test kit (signedDelivery), which signs as Typeform documents
// (https://www.typeform.com/developers/webhooks/secure-your-webhooks/):
// Typeform-Signature: sha256=<base64 HMAC-SHA256 of the raw body>.
const secret = () => randomBytes(24).toString('base64url');
const body = () =>
  `{"event_id": "01JQ8ZP6N6G0TQ3R2S1Q0P9N8M", "event_type": "form_response", "form_response": {"form_id": "lT4Z3j", "answers": [{"type": "text", "text": ${TRICKY_JSON}}]}}`;
function sign(payload: string, key: string, at = NOW): Delivery {
  const d = signedDelivery('typeform', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('typeform provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'typeform',
    credential: oneSecret(secret),
    make: (config) => typeform({ secret: config }),
    body,
    sign,
    expect: { dedup: 'id', id: '01JQ8ZP6N6G0TQ3R2S1Q0P9N8M', type: 'form_response', typeSigned: true },
    noteOf: (event) =>
      (event as { form_response: { answers: { text: unknown }[] } }).form_response.answers[0]?.text,
    toleranceMs: undefined,
    signatureHeader: 'typeform-signature',
    malformed: ['tfp_abc123', ' '],
  });

  it('refuses a hex signature where base64 is sent', async () => {
    const key = secret();
    const hex = `sha256=${createHmac('sha256', key).update(body()).digest('hex')}`;
    await rejectsBoth(
      typeform({ secret: key }),
      withHeader(sign(body(), key), 'typeform-signature', hex),
      'invalid_signature',
    );
  });

  it('defaults retention to 2 days', () => {
    assert.equal(typeform({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
