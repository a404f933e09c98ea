/**
 * Okta event hooks. Okta's SDKs on npm call its API and send no event hooks; the deliveries follow
 * the documented protocol: https://developer.okta.com/docs/concepts/event-hooks/
 * (the authentication field and secret sent as a header on every request, System Log events in
 * data.events, and the one-time verification: a GET with X-Okta-Verification-Challenge, answered
 * {"verification": <challenge>}), as the kit's signedDelivery and handshakeRequest send it.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { okta } from '../../src/providers/index.js';
import { handshakeRequest, signedDelivery } from '../../src/testing/index.js';
import { assertHandshake, assertRefused, handshakeReceiver } from './handshakeKit.js';
import { acceptsBoth, receiveAll, rejects, rejectsBoth, TRICKY_JSON, TRICKY_TEXT } from './kit.js';

const secret = () => randomBytes(24).toString('base64url');
const event = (uuid: string, eventType: string) =>
  `{"uuid":"${uuid}","published":"2026-11-30T05:00:00.000Z","eventType":"${eventType}","version":"0","displayMessage":${TRICKY_JSON},"severity":"INFO","actor":{"id":"00u1","type":"User"}}`;
const body = (...events: string[]) =>
  `{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://example.okta.com/api/v1/eventHooks/who8","eventId":"b5a188b9-5ece-4636-b041-482ffda96311","eventTime":"2026-11-30T05:00:00.000Z","contentType":"application/json","data":{"events":[${events.join(',')}]}}`;
const one = () => body(event('5e2a2a39-d3a4-11ee-9b8b-3b4d1f0a5c11', 'user.session.start'));
/** A delivery from the kit; the hook's authentication field renamed by hand when it is not Authorization. */
function deliver(payload: string, value: string, name = 'authorization') {
  const { authorization, ...headers } = signedDelivery('okta', { payload, secret: value }).headers;
  return { body: payload, headers: { ...headers, [name]: authorization! } };
}
/** The one-time verification GET from the kit, as the handshake receiver takes it. */
function verification(secret: string, challenge: string) {
  const h = handshakeRequest('okta', { secret, challenge });
  return { method: h.method, headers: { ...h.headers }, url: h.url };
}

describe('okta provider (the documented event hook protocol)', () => {
  it('accepts a delivery carrying the authentication secret, keyed and routed per event', async () => {
    const s = secret();
    const verified = await acceptsBoth(okta({ secret: s }), deliver(one(), s));
    assert.equal(verified.id, '5e2a2a39-d3a4-11ee-9b8b-3b4d1f0a5c11');
    assert.equal(verified.type, 'user.session.start');
    assert.equal(verified.dedup, 'id');
    assert.equal((verified.event as { displayMessage: string }).displayMessage, TRICKY_TEXT);
  });

  it('refuses a wrong, missing or rotated-out secret as invalid_token or missing_header', async () => {
    const [a, b] = [secret(), secret()];
    await rejectsBoth(okta({ secret: a }), deliver(one(), b), 'invalid_token');
    await rejectsBoth(okta({ secret: a }), deliver(one(), `${a}x`), 'invalid_token');
    await rejectsBoth(okta({ secret: a }), { body: one(), headers: {} }, 'missing_header');
    // While rotating, both are accepted; afterwards only the new one.
    await acceptsBoth(okta({ secret: [b, a] }), deliver(one(), a));
    await acceptsBoth(okta({ secret: [b, a] }), deliver(one(), b));
    await rejectsBoth(okta({ secret: b }), deliver(one(), a), 'invalid_token');
  });

  it('reads the secret from the Authentication field you named', async () => {
    const s = secret();
    await acceptsBoth(okta({ secret: s, header: 'X-Okta-Hook-Auth' }), deliver(one(), s, 'x-okta-hook-auth'));
    await rejectsBoth(okta({ secret: s, header: 'x-okta-hook-auth' }), deliver(one(), s), 'missing_header');
    assert.throws(
      () => okta({ secret: s, header: 'bad header:' }),
      (error: unknown) => error instanceof ConfigError && error.code === 'invalid_option',
    );
  });

  it('settles a batch per event: a re-sent batch with one new event runs only that one', async () => {
    const s = secret();
    const e1 = event('11111111-0000-4000-8000-000000000001', 'user.session.start');
    const e2 = event('11111111-0000-4000-8000-000000000002', 'user.lifecycle.deactivate');
    const { results, runs } = await receiveAll(okta({ secret: s }), [
      deliver(body(e1), s),
      deliver(body(e1, e2), s),
    ]);
    assert.deepEqual(
      results.map((r) => r.batch?.map((b) => b.outcome)),
      [['processed'], ['duplicate', 'processed']],
    );
    assert.equal(runs, 2);
  });

  it('refuses a body without events or an event without uuid', async () => {
    const s = secret();
    await rejects(okta({ secret: s }), deliver(body(), s), 'invalid_body');
    await rejects(
      okta({ secret: s }),
      deliver(body('{"eventType":"user.session.start"}'), s),
      'missing_event_id',
    );
  });

  it('the secret vouches for the sender, not the body: a changed body with the secret verifies (hence TLS and no header logging)', async () => {
    const s = secret();
    await acceptsBoth(okta({ secret: s }), deliver(one().replace('caf', 'cof'), s));
  });

  it('refuses an Okta API token pasted as the secret, at construction', () => {
    for (const bad of ['SSWS 00abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN', `00${'a'.repeat(40)}`, '', '  ']) {
      assert.throws(
        () => okta({ secret: bad }),
        (error: unknown) => error instanceof ConfigError && error.code === 'invalid_secret',
        bad,
      );
    }
  });

  it('defaults retention to 1 day (Okta retries once)', () => {
    assert.equal(okta({ secret: secret() }).retentionMs, 86_400_000);
  });
});

describe('okta one-time verification (X-Okta-Verification-Challenge GET)', () => {
  it('answers {"verification"} once the authentication secret checks out: outcome handshake, store and handler untouched', async () => {
    const s = secret();
    const { send, ran, touched } = handshakeReceiver(okta({ secret: s }));
    const result = await send(verification(s, 'f0MLQRY7PzWiCSpX2gBUGVGFqIbAbj9hn3u6'));
    await assertHandshake(result, { json: { verification: 'f0MLQRY7PzWiCSpX2gBUGVGFqIbAbj9hn3u6' } });
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('refuses a verification without the secret or with a wrong one, echoing nothing', async () => {
    const s = secret();
    const { send, touched } = handshakeReceiver(okta({ secret: s }));
    const challenge = { 'x-okta-verification-challenge': 'abc' };
    assertRefused(await send({ method: 'GET', headers: challenge }), 'missing_header');
    assertRefused(await send(verification(secret(), 'abc')), 'invalid_token');
    assertRefused(await send(verification(s, '<b>x</b>')), 'malformed_header');
    assertRefused(await send({ method: 'GET', headers: { authorization: s } }), 'method_not_allowed');
    assert.deepEqual(touched, []);
  });

  it('nothing reaches the store before authentication: a delivery with a wrong secret touches neither store nor handler', async () => {
    const { send, ran, touched } = handshakeReceiver(okta({ secret: secret() }));
    assertRefused(await send(deliver(one(), secret())), 'invalid_token');
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });
});
