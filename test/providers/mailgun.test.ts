import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { mailgun } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  NOT_JSON,
  NOW,
  oneSecret,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
} from './kit.js';

// Mailgun's documented algorithm: hex(HMAC-SHA256(webhook signing key, timestamp + token)), sent in
// the body next to the (unsigned) event data. Signed by the test kit (it fills signature.signature);
// the legacy form-encoded delivery by hand.
const secret = () => randomBytes(16).toString('hex');
const eventData = () =>
  `{"id": "CPgfbmQMTCKtHW6uIWtuVe", "event": "delivered", "timestamp": 1764478800.1, "message": {"headers": {"subject": ${TRICKY_JSON}}}}`;

function sign(data: string, key: string, at: Date, token = randomBytes(25).toString('hex')): Delivery {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const payload = `{"signature": {"timestamp": "${timestamp}", "token": "${token}", "signature": ""}, "event-data": ${data}}`;
  if (data === NOT_JSON) {
    // The kit signs JSON bodies only (the signature goes inside one): a body that is not JSON by hand.
    const signature = createHmac('sha256', key)
      .update(timestamp + token)
      .digest('hex');
    return { body: payload.replace('"signature": ""', `"signature": "${signature}"`), headers: {} };
  }
  const d = signedDelivery('mailgun', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

const tamperToken = (d: Delivery): Delivery => ({
  ...d,
  body: (d.body as string).replace(/"token": "(.)/, '"token": "Z'),
});

describe('mailgun provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'mailgun',
    credential: oneSecret(secret),
    make: (config) => mailgun({ secret: config }),
    body: eventData,
    sign,
    expect: { dedup: 'id', id: 'CPgfbmQMTCKtHW6uIWtuVe', type: 'delivered', typeSigned: false },
    noteOf: (event) =>
      (event as { 'event-data': { message: { headers: { subject: unknown } } } })['event-data'].message
        .headers.subject,
    toleranceMs: 12 * 3_600_000,
    tamper: tamperToken,
    reserialisable: false,
    // Timestamp, token and signature are fields of the body: authenticate must parse it.
    nonJson: 'both-reject',
    malformed: ['pubkey-0123456789abcdef', '', '   '],
  });

  it('keys on the signed token, not on the unauthenticated event id', async () => {
    const key = secret();
    const verified = await verifyAt(mailgun({ secret: key }), sign(eventData(), key, NOW, 'tok'.repeat(10)));
    assert.equal(verified.key, `token:${'tok'.repeat(10)}`);
  });

  it('treats a captured signature replayed with other event data as a conflict, never a new event', async () => {
    const key = secret();
    const original = sign(eventData(), key, NOW);
    const forged = {
      ...original,
      body: (original.body as string).replace('"event": "delivered"', '"event": "failed"'),
    };
    // The event data is not signed: verification alone cannot tell the forgery apart, and the
    // type read from it (`event-data.event`) is not covered by the signature either.
    const verified = await verifyAt(mailgun({ secret: key }), forged);
    assert.equal(verified.type, 'failed');
    assert.equal(verified.typeSigned ?? false, false);
    const { results, runs } = await receiveAll(mailgun({ secret: key }), [original, forged]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'conflict'],
    );
    assert.equal(runs, 1);
  });

  it('accepts a retry carrying the original signature hours later (default tolerance 12 hours)', async () => {
    const key = secret();
    const d = sign(eventData(), key, NOW);
    await verifyAt(mailgun({ secret: key }), d, new Date(NOW.getTime() + 8 * 3_600_000));
  });

  it('verifies a legacy form-encoded delivery', async () => {
    const key = secret();
    const timestamp = String(Math.floor(NOW.getTime() / 1000));
    const token = 'a'.repeat(50);
    const signature = createHmac('sha256', key)
      .update(timestamp + token)
      .digest('hex');
    const form = new URLSearchParams({
      timestamp,
      token,
      signature,
      event: 'delivered',
      recipient: 'jon@example.com',
    });
    const verified = await verifyAt(mailgun({ secret: key }), {
      body: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(verified.type, 'delivered');
  });

  it('rejects a body without a signature object as invalid_body', async () => {
    await rejects(mailgun({ secret: secret() }), { body: '{"event-data":{}}', headers: {} }, 'invalid_body');
  });

  it('defaults retention to 1 day, longer than the 12-hour tolerance', () => {
    assert.equal(mailgun({ secret: secret() }).retentionMs, 86_400_000);
  });
});
