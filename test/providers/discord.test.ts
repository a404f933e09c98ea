import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { discord } from '../../src/providers/index.js';
import { signedDelivery, type TestKeys, testKeys } from '../../src/testing/index.js';
import { type Delivery, NOW, providerCases, receiveAll, rejects, TRICKY_JSON, verifyAt } from './kit.js';

// Discord's documented algorithm, signed by the test kit: hex(Ed25519(private key, timestamp + raw
// body)); the provider takes the public key as 64 hex characters (the kit's test key pair's trust).
function credential() {
  const keys = testKeys('discord');
  return { signer: keys, config: keys.trust.publicKey };
}

const body = () =>
  `{"id": "1204351256734171136", "type": 2, "application_id": "app1", "token": "tok", "data": {"name": "say", "options": [{"name": "text", "value": ${TRICKY_JSON}}]}}`;

function sign(payload: string, keys: TestKeys, at: Date): Delivery {
  const d = signedDelivery('discord', { payload, keys, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('discord provider (Ed25519, signed by the test kit with its test keys)', () => {
  providerCases<TestKeys>({
    name: 'discord',
    credential,
    make: (config) => discord({ publicKey: config }),
    body,
    sign,
    expect: { dedup: 'id', id: '1204351256734171136', type: 'APPLICATION_COMMAND', typeSigned: true },
    noteOf: (event) => (event as { data: { options: { value: unknown }[] } }).data.options[0]?.value,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'x-signature-ed25519',
    malformed: ['abc', 'zz'.repeat(32), '00'.repeat(31), ''],
  });

  it('types a PING interaction so on: { PING } can answer it', async () => {
    const { signer, config } = credential();
    const verified = await verifyAt(
      discord({ publicKey: config }),
      sign('{"id":"1","type":1,"token":"t"}', signer, NOW),
    );
    assert.equal(verified.type, 'PING');
    assert.equal(verified.typeSigned, true);
  });

  it('keys a webhook event (no id) on the signed body, so a replay inside the tolerance is a duplicate', async () => {
    const { signer, config } = credential();
    const payload =
      '{"version":1,"application_id":"app1","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2026-11-30T05:00:00Z","data":{}}}';
    const d = sign(payload, signer, NOW);
    const verified = await verifyAt(discord({ publicKey: config }), d);
    assert.equal(verified.type, 'APPLICATION_AUTHORIZED');
    assert.equal(verified.typeSigned, true);
    assert.equal(verified.dedup, 'body');
    const { results } = await receiveAll(discord({ publicKey: config }), [d, d]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
  });

  it('rejects a signed interaction without an id as missing_event_id, never keying it on the body', async () => {
    const { signer, config } = credential();
    await rejects(
      discord({ publicKey: config }),
      sign('{"type":2,"application_id":"app1","token":"tok","data":{}}', signer, NOW),
      'missing_event_id',
    );
  });

  it('rejects a signature of the wrong length as malformed_header', async () => {
    const { signer, config } = credential();
    const d = sign(body(), signer, NOW);
    d.headers['x-signature-ed25519'] = 'ab'.repeat(10);
    await rejects(discord({ publicKey: config }), d, 'malformed_header');
  });

  it('defaults retention to 1 day (no retries for interactions)', () => {
    assert.equal(discord({ publicKey: credential().config }).retentionMs, 86_400_000);
  });
});
