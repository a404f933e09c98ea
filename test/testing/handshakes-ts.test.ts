/**
 * The kit's handshakes of the timestamped senders against onceonly's own receiver: Slack's
 * `url_verification`, Twitch's `webhook_callback_verification` and Zoom's `endpoint.url_validation`,
 * each answered by the receiver as the sender expects (test/providers/handshakes.test.ts and
 * test/providers/twitch.test.ts check those answers against the senders' docs), and refused when
 * signed with another secret or too long ago.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Provider } from '../../src/index.js';
import { slack, twitch, zoom, zoomUrlValidation } from '../../src/providers/index.js';
import { handshakeRequest, providerOptions, type SenderName, testSecret } from '../../src/testing/index.js';
import { handshakeReceiver } from '../providers/handshakeKit.js';

const factories: Partial<Record<SenderName, (options: any) => Provider<any, any>>> = { slack, twitch, zoom };

/** A receiver for the provider of `name` verifying with `secret`, counting handler runs. */
function receiverFor(name: SenderName, secret: string) {
  return handshakeReceiver(factories[name]!(providerOptions(name, { secret })), { strict: false });
}

/** The answer to a handshake the kit made with `secret`; asserts it was answered as a handshake. */
async function answered(name: SenderName, secret: string, challenge: string) {
  const { receiver, ran } = receiverFor(name, secret);
  const h = handshakeRequest(name, { secret, challenge });
  assert.equal(h.method, 'POST');
  assert.equal(h.challenge, challenge);
  const response = await receiver.fetch(h.request());
  assert.equal(response.status, 200, await response.clone().text());
  assert.equal(response.headers.get('onceonly-outcome'), 'handshake');
  assert.equal(ran(), 0, 'a handshake runs no handler');
  return { response, h };
}

/** A handshake signed with another secret, or signed 20 minutes ago, is refused and echoes nothing. */
async function refusesForgedAndStale(name: SenderName, challenge: string) {
  const secret = testSecret(name);
  const { receiver, ran } = receiverFor(name, secret);
  for (const h of [
    handshakeRequest(name, { secret: testSecret(name), challenge }),
    handshakeRequest(name, { secret, challenge, at: new Date(Date.now() - 20 * 60_000) }),
  ]) {
    const response = await receiver.fetch(h.request());
    assert.ok(response.status >= 400 && response.status < 500, String(response.status));
    assert.ok(!(await response.text()).includes(challenge), 'no challenge echoed');
  }
  assert.equal(ran(), 0);
}

describe("handshakeRequest('slack'): Events API url_verification", () => {
  it('is answered with { challenge } once its signature checks out', async () => {
    const secret = testSecret('slack');
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
    const { response, h } = await answered('slack', secret, challenge);
    assert.deepEqual(await response.json(), { challenge });
    assert.equal(JSON.parse(h.text).type, 'url_verification');
  });

  it('is refused when signed with another secret or too long ago', async () => {
    await refusesForgedAndStale('slack', 'slackChallenge123');
  });
});

describe("handshakeRequest('twitch'): webhook_callback_verification", () => {
  it('is answered with the raw challenge as text once its signature checks out', async () => {
    const secret = testSecret('twitch');
    const challenge = 'pogchamp-kappa-360noscope-vohiyo';
    const { response, h } = await answered('twitch', secret, challenge);
    assert.equal(await response.text(), challenge);
    assert.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(h.headers['twitch-eventsub-message-type'], 'webhook_callback_verification');
  });

  it('is refused when signed with another secret or too long ago', async () => {
    await refusesForgedAndStale('twitch', 'twitchChallenge123');
  });
});

describe("handshakeRequest('zoom'): endpoint.url_validation", () => {
  it('is answered with the plain token and its HMAC under the secret token', async () => {
    const secret = testSecret('zoom');
    const plainToken = 'qgg8vlvZRS6UYooatFL8Aw';
    const { response, h } = await answered('zoom', secret, plainToken);
    const answer = await response.json();
    assert.deepEqual(answer, {
      plainToken,
      encryptedToken: createHmac('sha256', secret).update(plainToken).digest('hex'),
    });
    assert.deepEqual(answer, zoomUrlValidation(JSON.parse(h.text), secret));
  });

  it('is refused when signed with another secret or too long ago', async () => {
    await refusesForgedAndStale('zoom', 'zoomChallenge123');
  });
});

it('a fresh challenge each call by default', () => {
  const secret = testSecret('zoom');
  const [a, b] = [handshakeRequest('zoom', { secret }), handshakeRequest('zoom', { secret })];
  assert.ok(a.challenge && b.challenge && a.challenge !== b.challenge);
  assert.equal(JSON.parse(a.text).payload.plainToken, a.challenge);
});
