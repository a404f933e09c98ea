import { strict as assert } from 'node:assert';
import { sign as ecSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { sendgrid } from '../../src/providers/index.js';
import { type Delivery, NOW, providerCases, rejects, TRICKY_JSON, verifyAt } from './kit.js';

// SendGrid's documented algorithm: base64(DER(ECDSA-P256-SHA256(private key, timestamp + raw body))).
function credential() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { signer: privateKey, config: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') };
}

const event = (id: string, type = 'delivered') =>
  `{"email": "jon@example.com", "timestamp": 1764478800, "event": "${type}", "sg_event_id": "${id}", "sg_message_id": "m1", "note": ${TRICKY_JSON}}`;
const body = () => `[${event('sg_ev_1')}]`;

function sign(payload: string, key: KeyObject, at: Date): Delivery {
  const ts = String(Math.floor(at.getTime() / 1000));
  return {
    body: payload,
    headers: {
      'x-twilio-email-event-webhook-signature': ecSign(
        'sha256',
        Buffer.from(ts + payload, 'utf8'),
        key,
      ).toString('base64'),
      'x-twilio-email-event-webhook-timestamp': ts,
      'content-type': 'application/json',
    },
  };
}

describe('sendgrid provider (ECDSA P-256, key pair generated in the test)', () => {
  providerCases<KeyObject>({
    name: 'sendgrid',
    credential,
    make: (config) => sendgrid({ publicKey: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'sg_ev_1' },
    noteOf: (events) => (events as { note: unknown }[])[0]?.note,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'x-twilio-email-event-webhook-signature',
    malformed: [
      'not a key',
      generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
        .publicKey.export({ type: 'spki', format: 'der' })
        .toString('base64'),
      '',
    ],
  });

  it('accepts the public key as PEM too', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await verifyAt(sendgrid({ publicKey: pem }), sign(body(), privateKey, NOW));
  });

  it('keys a batch on its sorted sg_event_ids, so the same batch in another order shares the key', async () => {
    const { signer, config } = credential();
    const one = await verifyAt(
      sendgrid({ publicKey: config }),
      sign(`[${event('a')},${event('b', 'open')}]`, signer, NOW),
    );
    const two = await verifyAt(
      sendgrid({ publicKey: config }),
      sign(`[${event('b', 'open')},${event('a')}]`, signer, NOW),
    );
    assert.match(one.key ?? '', /^batch:[0-9a-f]{64}$/);
    assert.equal(one.key, two.key);
    assert.equal(one.dedup, 'id');
  });

  it('rejects a signed event without sg_event_id as missing_event_id', async () => {
    const { signer, config } = credential();
    await rejects(
      sendgrid({ publicKey: config }),
      sign('[{"event":"open"}]', signer, NOW),
      'missing_event_id',
    );
  });

  it('rejects a signed body that is not a non-empty JSON array as invalid_body', async () => {
    const { signer, config } = credential();
    await rejects(sendgrid({ publicKey: config }), sign('{"event":"open"}', signer, NOW), 'invalid_body');
    await rejects(sendgrid({ publicKey: config }), sign('[]', signer, NOW), 'invalid_body');
  });

  it('rejects a signature that is not base64 as malformed_header', async () => {
    const { signer, config } = credential();
    const d = sign(body(), signer, NOW);
    d.headers['x-twilio-email-event-webhook-signature'] = '***';
    await rejects(sendgrid({ publicKey: config }), d, 'malformed_header');
  });

  it('defaults retention to 3 days (retries for 24 hours, duplicates seen over 29)', () => {
    assert.equal(sendgrid({ publicKey: credential().config }).retentionMs, 3 * 86_400_000);
  });
});
