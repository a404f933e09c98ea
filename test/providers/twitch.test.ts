/**
 * Twitch EventSub over webhooks. Twitch publishes no signing helper on npm; the vectors follow its
 * documented algorithm over node:crypto:
 * https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message
 * (sha256=hex(HMAC-SHA256(secret, message id + timestamp + raw body)), RFC 3339 timestamps with
 * nanoseconds, refuse messages older than 10 minutes), and the challenge
 * https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#responding-to-a-challenge-request
 * (answer 200 with the raw challenge as text/plain). Signed by the test kit, which labels the
 * message type from the body; a `type` given to `sign` relabels it (the header is not signed).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { twitch } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { assertHandshake, assertRefused, handshakeReceiver } from './handshakeKit.js';
import { type Delivery, NOW, oneSecret, providerCases, receiveAll, TRICKY_JSON, withHeader } from './kit.js';

const secret = () => randomBytes(24).toString('base64url');
const MESSAGE_ID = 'befa7b53-d79d-478f-86b9-120f112b044e';
const SUBSCRIPTION =
  '{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"enabled","type":"channel.follow","version":"2","cost":0,"condition":{"broadcaster_user_id":"1337"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T10:11:12.634234626Z"}';
const notification = () =>
  `{"subscription":${SUBSCRIPTION},"event":{"user_id":"1234","user_login":"cool_user","user_name":${TRICKY_JSON},"broadcaster_user_id":"1337"}}`;

function sign(payload: string, key: string, at: Date, type?: string, id = MESSAGE_ID): Delivery {
  const d = signedDelivery('twitch', { payload, secret: key, at, id });
  const signed: Delivery = { body: d.text, headers: { ...d.headers } };
  return type === undefined ? signed : withHeader(signed, 'twitch-eventsub-message-type', type);
}

describe('twitch provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'twitch',
    credential: oneSecret(secret),
    make: (config) => twitch({ secret: config }),
    body: notification,
    sign: (payload, key, at) => sign(payload, key, at),
    expect: { dedup: 'id', id: MESSAGE_ID, type: 'channel.follow', typeSigned: true },
    noteOf: (event) => (event as { event: { user_name: unknown } }).event.user_name,
    toleranceMs: 10 * 60_000,
    signatureHeader: 'twitch-eventsub-message-signature',
    malformed: ['', 'short', 'x'.repeat(101), 'oauth:abcdefghijklmnop', 'has a space in it'],
  });

  it('signs the message id: the same body under another id does not verify', async () => {
    const key = secret();
    const d = sign(notification(), key, NOW);
    const { results } = await receiveAll(twitch({ secret: key }), [
      withHeader(d, 'twitch-eventsub-message-id', 'a-fresh-id-from-a-replayer'),
    ]);
    assert.equal(results[0]?.code, 'invalid_signature');
  });

  it('routes a revocation by its signed body, and refuses a Message-Type header that disagrees with it', async () => {
    const key = secret();
    const revocation = `{"subscription":${SUBSCRIPTION.replace('"enabled"', '"authorization_revoked"')}}`;
    const { results, runs } = await receiveAll(twitch({ secret: key }), [
      sign(revocation, key, NOW, 'revocation', 'r-1'),
      // A signed notification relabelled as a revocation, and the reverse.
      sign(notification(), key, NOW, 'revocation', 'r-2'),
      sign(revocation, key, NOW, 'notification', 'r-3'),
    ]);
    assert.deepEqual(
      results.map((r) => r.code ?? r.outcome),
      ['processed', 'malformed_header', 'malformed_header'],
    );
    assert.equal(results[0]?.type, 'revocation');
    assert.equal(runs, 1);
  });

  it('refuses a timestamp that is not RFC 3339 as malformed_header', async () => {
    const key = secret();
    const d = sign(notification(), key, NOW);
    for (const bad of [
      String(Math.floor(NOW.getTime() / 1000)),
      '2026-11-30 05:00:00Z',
      '2026-11-30T05:00:00',
    ]) {
      const { results } = await receiveAll(twitch({ secret: key }), [
        withHeader(d, 'twitch-eventsub-message-timestamp', bad),
      ]);
      assert.equal(results[0]?.code, 'malformed_header', bad);
    }
  });

  it('refuses a chat OAuth token as the secret, naming what to copy', () => {
    assert.throws(
      () => twitch({ secret: 'oauth:0123456789abcdefghij' }),
      (error: unknown) => error instanceof ConfigError && /transport\.secret/.test(error.message),
    );
  });
});

describe('twitch webhook_callback_verification', () => {
  const challenge = 'pogchamp-kappa-360noscope-vohiyo';
  const verification = `{"challenge":"${challenge}","subscription":${SUBSCRIPTION.replace('"enabled"', '"webhook_callback_verification_pending"')}}`;

  it('answers a signed verification with the raw challenge as text: outcome handshake, store and handler untouched', async () => {
    const key = secret();
    const { send, ran, touched } = handshakeReceiver(twitch({ secret: key }));
    const d = sign(verification, key, NOW, 'webhook_callback_verification');
    await assertHandshake(await send({ body: verification, headers: d.headers }), {
      body: challenge,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('refuses an unsigned, wrongly signed or stale verification, echoing nothing', async () => {
    const key = secret();
    const { send, ran, touched } = handshakeReceiver(twitch({ secret: key }));
    const good = sign(verification, key, NOW, 'webhook_callback_verification');
    assertRefused(
      await send({
        body: verification,
        headers: withHeader(good, 'twitch-eventsub-message-signature', undefined).headers,
      }),
      'missing_header',
    );
    assertRefused(
      await send({
        body: verification,
        headers: sign(verification, secret(), NOW, 'webhook_callback_verification').headers,
      }),
      'invalid_signature',
    );
    const stale = new Date(NOW.getTime() - 11 * 60_000);
    assertRefused(
      await send({
        body: verification,
        headers: sign(verification, key, stale, 'webhook_callback_verification').headers,
      }),
      'timestamp_too_old',
    );
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('refuses a signed notification labelled as a verification instead of echoing or running it', async () => {
    const key = secret();
    const { send, ran, touched } = handshakeReceiver(twitch({ secret: key }));
    const d = sign(notification(), key, NOW, 'webhook_callback_verification');
    assertRefused(await send({ body: notification(), headers: d.headers }), 'malformed_header');
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('defaults to a 10-minute tolerance and 1 day of retention', async () => {
    const key = secret();
    const provider = twitch({ secret: key });
    assert.equal(provider.retentionMs, 86_400_000);
    const { results } = await receiveAll(provider, [
      sign(notification(), key, new Date(NOW.getTime() - 9 * 60_000)),
    ]);
    assert.equal(results[0]?.outcome, 'processed');
  });
});
