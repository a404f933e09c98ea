/**
 * The kit's handshakes of the token senders (Okta's one-time verification), against onceonly's
 * receiver: the request `handshakeRequest` builds is the one the receiver answers, with the answer
 * Okta expects, before any delivery and without touching the store or the handler.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { okta } from '../../src/providers/index.js';
import { handshakeRequest, senders, signedDelivery, testSecret } from '../../src/testing/index.js';
import { assertHandshake, assertRefused, handshakeReceiver } from '../providers/handshakeKit.js';

const CHALLENGE = 'f0MLQRY7PzWiCSpX2gBUGVGFqIbAbj9hn3u6';

describe("handshakeRequest('okta'): the event hook's one-time verification", () => {
  it('is a GET with the authentication secret and X-Okta-Verification-Challenge, as Okta sends it', () => {
    const secret = testSecret('okta');
    const h = handshakeRequest('okta', { secret, challenge: CHALLENGE });
    assert.equal(h.method, 'GET');
    assert.equal(h.url, 'http://localhost:3000/webhooks/okta');
    assert.equal(h.headers.authorization, secret);
    assert.equal(h.headers['x-okta-verification-challenge'], CHALLENGE);
    assert.equal(h.challenge, CHALLENGE);
    assert.equal(h.text, '');
    assert.deepEqual(senders.find((s) => s.name === 'okta')?.handshake, true);
  });

  it('gets the answer onceonly\'s receiver gives: {"verification": <challenge>}, outcome handshake, handler not run', async () => {
    const secret = testSecret('okta');
    const { receiver, events: seen } = handshakeReceiver(okta({ secret }), { strict: false });
    const response = await receiver.fetch(
      handshakeRequest('okta', { secret, challenge: CHALLENGE }).request(),
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('onceonly-outcome'), 'handshake');
    assert.deepEqual(await response.json(), { verification: CHALLENGE });
    assert.equal(seen.length, 0);
    // The deliveries that follow it are processed as usual.
    const delivery = await receiver.fetch(signedDelivery('okta', { secret }).request());
    assert.equal(delivery.headers.get('onceonly-outcome'), 'processed');
    assert.equal(seen.length, 1);
  });

  it('a fresh challenge each time by default, each echoed; the store is never touched', async () => {
    const secret = testSecret('okta');
    const { send, ran, touched } = handshakeReceiver(okta({ secret }));
    const [a, b] = [handshakeRequest('okta', { secret }), handshakeRequest('okta', { secret })];
    assert.notEqual(a.challenge, b.challenge);
    for (const h of [a, b]) {
      const result = await send({ method: h.method, headers: { ...h.headers }, url: h.url });
      await assertHandshake(result, { json: { verification: h.challenge } });
    }
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('made with another secret, it is refused and echoes nothing', async () => {
    const { send, touched } = handshakeReceiver(okta({ secret: testSecret('okta') }));
    const h = handshakeRequest('okta', { secret: testSecret('okta'), challenge: CHALLENGE });
    assertRefused(await send({ method: h.method, headers: { ...h.headers }, url: h.url }), 'invalid_token');
    assert.deepEqual(touched, []);
  });

  it("needs the hook's authentication secret", () => {
    assert.throws(
      () => handshakeRequest('okta'),
      /okta's verification carries the hook's authentication secret/,
    );
  });
});
