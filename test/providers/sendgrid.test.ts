import { strict as assert } from 'node:assert';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { createReceiver, type DeliveryResult, memoryStore } from '../../src/index.js';
import { sendgrid } from '../../src/providers/index.js';
import { signedDelivery, type TestKeys, testKeys } from '../../src/testing/index.js';
import { type Delivery, NOW, providerCases, rejects, TRICKY_JSON, verifyAt } from './kit.js';

// SendGrid's documented algorithm, signed by the test kit: base64(DER(ECDSA-P256-SHA256(private key,
// timestamp + raw body))); the provider takes the kit's public key as base64 DER (its trust).
function credential() {
  const keys = testKeys('sendgrid');
  return { signer: keys, config: keys.trust.publicKey };
}

const event = (id: string, type = 'delivered') =>
  `{"email": "jon@example.com", "timestamp": 1764478800, "event": "${type}", "sg_event_id": "${id}", "sg_message_id": "m1", "note": ${TRICKY_JSON}}`;
const body = () => `[${event('sg_ev_1')}]`;

function sign(payload: string, keys: TestKeys, at: Date): Delivery {
  const d = signedDelivery('sendgrid', { payload, keys, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('sendgrid provider (ECDSA P-256, signed by the test kit with its test keys)', () => {
  providerCases<TestKeys>({
    name: 'sendgrid',
    credential,
    make: (config) => sendgrid({ publicKey: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'sg_ev_1', typeSigned: true },
    noteOf: (event) => (event as { note: unknown }).note,
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
    const { signer, config } = credential();
    const der = Buffer.from(config, 'base64');
    const pem = createPublicKey({ key: der, format: 'der', type: 'spki' }).export({
      type: 'spki',
      format: 'pem',
    });
    await verifyAt(sendgrid({ publicKey: pem.toString() }), sign(body(), signer, NOW));
  });

  it('verifies a batch as one item per event, each with its signed sg_event_id and type', async () => {
    const { signer, config } = credential();
    const verified = await verifyAt(
      sendgrid({ publicKey: config }),
      sign(`[${event('a')},${event('b', 'open')}]`, signer, NOW),
    );
    assert.deepEqual(
      verified.batch?.map((item) => [item.id, item.type]),
      [
        ['a', 'delivered'],
        ['b', 'open'],
      ],
    );
    assert.equal(verified.id, 'a');
    assert.equal(verified.dedup, 'id');
  });

  it('runs each event of a batch once across re-groupings, and a retry re-runs only the event that failed', async () => {
    const { signer, config } = credential();
    const ran: string[] = [];
    let failB = true;
    const outcomes: DeliveryResult[] = [];
    const receiver = createReceiver({
      provider: sendgrid({ publicKey: config }),
      store: memoryStore(),
      handler: ({ event }) => {
        const id = (event as { sg_event_id: string }).sg_event_id;
        if (id === 'b' && failB) {
          failB = false;
          throw new Error('analytics API down');
        }
        ran.push(id);
      },
      onOutcome: (r) => {
        outcomes.push(r);
      },
    });
    const send = (body: string) => {
      const d = sign(body, signer, NOW);
      return receiver.receive({ rawBody: d.body, headers: d.headers, receivedAt: NOW });
    };
    // a ran, b failed, c ran: the provider is told to retry (500).
    const first = await send(`[${event('a')},${event('b', 'open')},${event('c', 'click')}]`);
    assert.equal(first.status, 500);
    assert.equal(first.outcome, 'failed');
    assert.deepEqual(
      first.batch?.map((r) => [r.id, r.outcome]),
      [
        ['a', 'processed'],
        ['b', 'failed'],
        ['c', 'processed'],
      ],
    );
    assert.deepEqual(
      outcomes.map((r) => `${r.id}:${r.outcome}`),
      ['a:processed', 'b:failed', 'c:processed'],
      'each event reached onOutcome on its own',
    );
    // The retry comes back grouped differently, with a new event: only b and d run.
    const retry = await send(`[${event('c', 'click')},${event('b', 'open')},${event('d')}]`);
    assert.equal(retry.status, 200);
    assert.equal(retry.outcome, 'processed');
    assert.deepEqual(ran, ['a', 'c', 'b', 'd']);
    // The same again: all duplicates.
    const again = await send(`[${event('a')},${event('b', 'open')}]`);
    assert.equal(again.outcome, 'duplicate');
    assert.deepEqual(ran, ['a', 'c', 'b', 'd']);
  });

  it('routes each event of a batch by its type through on, and acknowledges types it has no handler for', async () => {
    const { signer, config } = credential();
    const bounced: string[] = [];
    const receiver = createReceiver({
      provider: sendgrid({ publicKey: config }),
      store: memoryStore(),
      on: { bounce: ({ event }) => void bounced.push(String((event as { email: string }).email)) },
      onOutcome: () => {},
    });
    const d = sign(`[${event('x1', 'bounce')},${event('x2', 'open')}]`, signer, NOW);
    const result = await receiver.receive({ rawBody: d.body, headers: d.headers, receivedAt: NOW });
    assert.equal(result.status, 200);
    assert.deepEqual(
      result.batch?.map((r) => r.outcome),
      ['processed', 'ignored'],
    );
    assert.deepEqual(bounced, ['jon@example.com']);
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
