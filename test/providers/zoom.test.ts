import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { zoom, zoomUrlValidation } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, receiveAll, TRICKY_JSON } from './kit.js';

// Zoom's documented algorithm: x-zm-signature: v0=hex(HMAC-SHA256(secret token, "v0:" + ts + ":" + raw body)),
// signed by the test kit.
const secret = () => randomBytes(16).toString('base64url');
const body = () =>
  `{"event": "meeting.started", "event_ts": 1764478800000, "payload": {"account_id": "a", "object": {"id": 1, "topic": ${TRICKY_JSON}}}}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('zoom', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('zoom provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'zoom',
    credential: oneSecret(secret),
    make: (config) => zoom({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', type: 'meeting.started', typeSigned: true },
    noteOf: (event) => (event as { payload: { object: { topic: unknown } } }).payload.object.topic,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'x-zm-signature',
    malformed: ['', ' \t'],
  });

  it('keys a retry re-signed with a new timestamp on the body: a duplicate', async () => {
    const key = secret();
    const { results } = await receiveAll(zoom({ secret: key }), [
      sign(body(), key, NOW),
      sign(body(), key, new Date(NOW.getTime() + 60_000)),
    ]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
  });

  it('answers endpoint.url_validation with the plain token and its HMAC', () => {
    const key = secret();
    const answer = zoomUrlValidation({ payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' } }, key);
    assert.deepEqual(answer, {
      plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
      encryptedToken: createHmac('sha256', key).update('qgg8vlvZRS6UYooatFL8Aw').digest('hex'),
    });
  });

  it('defaults retention to 1 day (retries over about 85 minutes)', () => {
    assert.equal(zoom({ secret: secret() }).retentionMs, 86_400_000);
  });
});
