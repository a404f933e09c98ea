/**
 * The handshakes of the existing providers, answered by the receiver itself: Slack's Events API
 * `url_verification` and Zoom's `endpoint.url_validation`, each only once its own signature checks out.
 * The bodies are written here (some deliberately hostile) and signed by the test kit.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { createReceiver, type DeliveryResult, memoryStore } from '../../src/index.js';
import { slack, zoom, zoomUrlValidation } from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';
import { signedDelivery } from '../../src/testing/index.js';
import { NOW } from './kit.js';

const ts = (at: Date) => String(Math.floor(at.getTime() / 1000));

function receiverFor(provider: Provider<any, any>) {
  const outcomes: DeliveryResult[] = [];
  let ran = 0;
  const store = memoryStore();
  const receiver = createReceiver({
    provider,
    store,
    handler: () => {
      ran += 1;
    },
    onOutcome: (r) => {
      outcomes.push(r);
    },
    logger: false,
  });
  const send = (body: string, headers: Record<string, string>, at = NOW) =>
    receiver.receive({
      rawBody: body,
      headers: { 'content-type': 'application/json', ...headers },
      receivedAt: at,
    });
  return { send, outcomes, ran: () => ran, store };
}

describe('Slack url_verification', () => {
  const secret = () => randomBytes(16).toString('hex');
  const sign = (key: string, body: string, at = NOW) => ({
    ...signedDelivery('slack', { payload: body, secret: key, at }).headers,
  });
  const verification =
    '{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}';

  it('answers a signed url_verification with its challenge: outcome handshake, no handler, nothing stored', async () => {
    const key = secret();
    const { send, outcomes, ran } = receiverFor(slack({ secret: key }));
    const result = await send(verification, sign(key, verification));
    assert.equal(result.outcome, 'handshake');
    assert.equal(result.status, 200);
    assert.deepEqual(await result.response?.json(), {
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
    });
    assert.equal(ran(), 0);
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ['handshake'],
    );
    // Answered again on a retry: nothing was remembered.
    assert.equal((await send(verification, sign(key, verification))).outcome, 'handshake');
  });

  it('refuses an unsigned, wrongly signed or stale url_verification, echoing no challenge', async () => {
    const key = secret();
    const { send, ran } = receiverFor(slack({ secret: key }));
    for (const headers of [
      {},
      sign(secret(), verification),
      sign(key, verification, new Date(NOW.getTime() - 10 * 60_000)),
    ]) {
      const result = await send(verification, headers);
      assert.equal(result.outcome, 'rejected');
      assert.ok(result.status === 400 || result.status === 401, String(result.status));
      assert.equal(result.response, undefined);
    }
    assert.equal(ran(), 0);
  });

  it('leaves an event that merely mentions url_verification to the handler', async () => {
    const key = secret();
    const { send, ran } = receiverFor(slack({ secret: key }));
    const body =
      '{"type":"event_callback","event_id":"Ev1","event":{"type":"message","text":"what is url_verification?"}}';
    const result = await send(body, sign(key, body));
    assert.equal(result.outcome, 'processed');
    assert.equal(ran(), 1);
  });
});

describe('Zoom endpoint.url_validation', () => {
  const secret = () => randomBytes(16).toString('base64url');
  const sign = (key: string, body: string, at = NOW) => ({
    ...signedDelivery('zoom', { payload: body, secret: key, at }).headers,
  });
  const validation = (plainToken: string) =>
    JSON.stringify({ payload: { plainToken }, event_ts: NOW.getTime(), event: 'endpoint.url_validation' });

  it("answers a signed validation with the plain token and its HMAC under the secret token (Zoom's documented answer)", async () => {
    const key = secret();
    const body = validation('qgg8vlvZRS6UYooatFL8Aw');
    const { send, ran } = receiverFor(zoom({ secret: key }));
    const result = await send(body, sign(key, body));
    assert.equal(result.outcome, 'handshake');
    const answer = await result.response?.json();
    assert.deepEqual(answer, {
      plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
      encryptedToken: createHmac('sha256', key).update('qgg8vlvZRS6UYooatFL8Aw').digest('hex'),
    });
    assert.deepEqual(answer, zoomUrlValidation(JSON.parse(body), key));
    assert.equal(ran(), 0);
  });

  it('is no signing oracle: an unsigned validation naming a forged delivery as its token is refused, so no signature for it is ever handed out', async () => {
    const key = secret();
    const { send } = receiverFor(zoom({ secret: key }));
    // What a forger wants signed: Zoom's signed content of a delivery of their choosing.
    const forged = '{"event":"meeting.started","payload":{}}';
    const wanted = `v0:${ts(NOW)}:${forged}`;
    const body = validation(wanted);
    for (const headers of [{}, sign(secret(), body), { ...sign(key, body), 'x-zm-signature': 'v0=00' }]) {
      const result = await send(body, headers);
      assert.equal(result.outcome, 'rejected');
      assert.equal(result.response, undefined);
    }
  });

  it('answers under the secret that signed the request while rotating', async () => {
    const [current, old] = [secret(), secret()];
    const body = validation('tok');
    const { send } = receiverFor(zoom({ secret: [old, current] }));
    const answer = await (await send(body, sign(current, body)))?.response?.json();
    assert.equal(answer.encryptedToken, createHmac('sha256', current).update('tok').digest('hex'));
  });
});
