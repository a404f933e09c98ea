import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { persona } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  acceptsBoth,
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  rejectsBoth,
  TRICKY_JSON,
} from './kit.js';

// Persona's documented algorithm (https://docs.withpersona.com/webhooks#checking-signatures):
// Persona-Signature: t=<seconds>,v1=<hex HMAC-SHA256 of `t.body`>; while a secret rotates, two
// such lists separated by a space, one per secret. Signed by the test kit; the rotation header
// (several lists) by hand.
const secret = () => `wbhsec_${randomBytes(18).toString('hex')}`;
const body = () =>
  `{"data": {"type": "event", "id": "evt_XGuYWp6PsTbMYvAqdMWk6Ktm", "attributes": {"name": "inquiry.completed", "payload": {"data": {"id": "inq_1", "note": ${TRICKY_JSON}}}, "created_at": "2026-11-30T05:00:00.000Z"}}}`;
const list = (payload: string, key: string, at: Date) => {
  const t = Math.floor(at.getTime() / 1000);
  return `t=${t},v1=${createHmac('sha256', key).update(`${t}.${payload}`).digest('hex')}`;
};

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('persona', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('persona provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'persona',
    credential: oneSecret(secret),
    make: (config) => persona({ secret: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'evt_XGuYWp6PsTbMYvAqdMWk6Ktm', type: 'inquiry.completed', typeSigned: true },
    noteOf: (event) =>
      (event as { data: { attributes: { payload: { data: { note: unknown } } } } }).data.attributes.payload
        .data.note,
    toleranceMs: 5 * 60_000,
    // The rotation form: whole lists separated by a space.
    several: (payload, good, bad, at) => ({
      body: payload,
      headers: {
        'persona-signature': [
          list(payload, bad[0]!, at),
          list(payload, good, at),
          list(payload, bad[1]!, at),
        ].join(' '),
      },
    }),
    signatureHeader: 'persona-signature',
    malformed: ['persona_production_abc123', 'persona_sandbox_abc123', ' '],
  });

  it('accepts the rotation header under either secret alone, and refuses it under neither', async () => {
    const [oldKey, newKey] = [secret(), secret()];
    const d: Delivery = {
      body: body(),
      headers: { 'persona-signature': `${list(body(), newKey, NOW)} ${list(body(), oldKey, NOW)}` },
    };
    await acceptsBoth(persona({ secret: oldKey }), d);
    await acceptsBoth(persona({ secret: newKey }), d);
    await rejectsBoth(persona({ secret: secret() }), d, 'invalid_signature');
  });

  it('refuses a rotation header in which one list is stale', async () => {
    const key = secret();
    const stale = new Date(NOW.getTime() - 3_600_000);
    const d: Delivery = {
      body: body(),
      headers: { 'persona-signature': `${list(body(), key, NOW)} ${list(body(), key, stale)}` },
    };
    await rejectsBoth(persona({ secret: key }), d, 'timestamp_too_old');
  });

  it('defaults retention to 3 days', () => {
    assert.equal(persona({ secret: secret() }).retentionMs, 3 * 86_400_000);
  });
});
