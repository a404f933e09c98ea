import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { paddle } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, rejects, TRICKY_JSON, withHeader } from './kit.js';

// Paddle's documented algorithm: Paddle-Signature: ts=<ts>;h1=hex(HMAC-SHA256(secret, ts + ":" + raw body)).
// Signed by the test kit; the header with several h1= (one per active key) by hand.
const secret = () => `pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_${randomBytes(24).toString('base64url')}`;
const body = () =>
  `{"event_id": "evt_01hv8wptq8987qeep44cyrewp9", "event_type": "subscription.created", "occurred_at": "2026-11-30T05:00:00.000Z", "notification_id": "ntf_01", "data": {"note": ${TRICKY_JSON}}}`;

const h1 = (payload: string, key: string, ts: string) =>
  createHmac('sha256', key).update(`${ts}:${payload}`, 'utf8').digest('hex');

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('paddle', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('paddle provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'paddle',
    credential: oneSecret(secret),
    make: (config) => paddle({ secret: config }),
    body,
    sign,
    expect: {
      dedup: 'id',
      id: 'evt_01hv8wptq8987qeep44cyrewp9',
      type: 'subscription.created',
      typeSigned: true,
    },
    noteOf: (event) => (event as { data: { note: unknown } }).data.note,
    toleranceMs: 5 * 60_000,
    several: (payload, good, bad, at) => {
      const ts = String(Math.floor(at.getTime() / 1000));
      const sigs = [bad[0]!, good, bad[1]!].map((k) => `h1=${h1(payload, k, ts)}`);
      return { body: payload, headers: { 'paddle-signature': `ts=${ts};${sigs.join(';')}` } };
    },
    signatureHeader: 'paddle-signature',
    malformed: ['pdl_live_apikey_01abc', 'pdl_sdbx_apikey_01abc', '  '],
  });

  it('rejects a header without ts= as malformed_header', async () => {
    const key = secret();
    const d = sign(body(), key, NOW);
    const header = d.headers['paddle-signature']!.replace(/^ts=\d+;/, '');
    await rejects(paddle({ secret: key }), withHeader(d, 'paddle-signature', header), 'malformed_header');
  });

  it('rejects a header with two ts= as malformed_header (which one was signed is unclear)', async () => {
    const key = secret();
    const d = sign(body(), key, NOW);
    const header = `ts=1;${d.headers['paddle-signature']!}`;
    await rejects(paddle({ secret: key }), withHeader(d, 'paddle-signature', header), 'malformed_header');
  });

  it('rejects a signed notification without event_id as missing_event_id', async () => {
    const key = secret();
    await rejects(
      paddle({ secret: key }),
      sign('{"event_type":"x","data":{}}', key, NOW),
      'missing_event_id',
    );
  });

  it('defaults retention to 4 days (Paddle retries for 3)', () => {
    assert.equal(paddle({ secret: secret() }).retentionMs, 4 * 86_400_000);
  });
});
