/**
 * The kit's handshakes (`handshakeRequest`) of the first body-HMAC group, sent to a receiver: each
 * gets the answer onceonly's receiver gives that sender (Asana's X-Hook-Secret echoed, Dropbox's
 * challenge echoed as plain text), with the store and the handler untouched.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Provider } from '../../src/index.js';
import { asana, dropbox } from '../../src/providers/index.js';
import { handshakeRequest, signedDelivery, testSecret } from '../../src/testing/index.js';
import { handshakeReceiver } from '../providers/handshakeKit.js';

/** A receiver over a store the deliveries that follow a handshake may use. */
const receiverOf = (provider: Provider<any, any>) => handshakeReceiver(provider, { strict: false });

describe("handshakeRequest('asana')", () => {
  it('posts X-Hook-Secret; the receiver hands it to onHookSecret and echoes it; deliveries signed with it then verify', async () => {
    const saved: string[] = [];
    const provider = asana({
      secret: () => saved.at(-1),
      onHookSecret: (secret) => {
        saved.push(secret);
        return true;
      },
    });
    const { receiver, outcomes, ran } = receiverOf(provider);
    const secret = testSecret('asana');
    const hs = handshakeRequest('asana', { secret });
    assert.equal(hs.method, 'POST');
    assert.equal(hs.headers['x-hook-secret'], secret);
    assert.equal(hs.challenge, secret);
    const answer = await receiver.fetch(hs.request());
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-hook-secret'), hs.challenge);
    assert.deepEqual(saved, [secret]);
    assert.equal(outcomes.at(-1)?.outcome, 'handshake');
    assert.equal(ran(), 0);

    const d = signedDelivery('asana', { secret });
    assert.equal((await receiver.fetch(d.request())).headers.get('onceonly-outcome'), 'processed');
    assert.equal(ran(), 1);
  });

  it('without a secret of the caller, offers a fresh one as the challenge', async () => {
    const hs = handshakeRequest('asana');
    assert.match(hs.challenge ?? '', /^[0-9a-f]{32}$/);
    assert.equal(hs.headers['x-hook-secret'], hs.challenge);
    const { receiver } = receiverOf(asana({ onHookSecret: () => true }));
    const answer = await receiver.fetch(hs.request());
    assert.equal(answer.headers.get('x-hook-secret'), hs.challenge);
  });

  it('is refused by a receiver without onHookSecret, echoing nothing', async () => {
    const { receiver, outcomes } = receiverOf(asana({ secret: testSecret('asana') }));
    const answer = await receiver.fetch(handshakeRequest('asana', { secret: testSecret('asana') }).request());
    assert.ok(answer.status >= 400 && answer.status < 500, String(answer.status));
    assert.equal(answer.headers.get('x-hook-secret'), null);
    assert.equal(outcomes.at(-1)?.outcome, 'rejected');
  });
});

describe("handshakeRequest('dropbox')", () => {
  it('GETs ?challenge=; the receiver echoes the challenge as text/plain with nosniff', async () => {
    const { receiver, outcomes, ran } = receiverOf(dropbox({ secret: testSecret('dropbox') }));
    const hs = handshakeRequest('dropbox', { challenge: 'eG9Ld1lOcXlnaQ' });
    assert.equal(hs.method, 'GET');
    assert.equal(hs.url, 'http://localhost:3000/webhooks/dropbox?challenge=eG9Ld1lOcXlnaQ');
    const answer = await receiver.fetch(hs.request());
    assert.equal(answer.status, 200);
    assert.equal(await answer.text(), 'eG9Ld1lOcXlnaQ');
    assert.equal(answer.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(outcomes.at(-1)?.outcome, 'handshake');
    assert.equal(ran(), 0);
  });

  it('keeps a URL query of its own and echoes a fresh challenge', async () => {
    const { receiver } = receiverOf(dropbox({ secret: testSecret('dropbox') }));
    const hs = handshakeRequest('dropbox', { url: 'https://example.test/hooks/dropbox?app=1' });
    assert.ok(hs.challenge);
    assert.equal(hs.url, `https://example.test/hooks/dropbox?app=1&challenge=${hs.challenge}`);
    assert.equal(await (await receiver.fetch(hs.request())).text(), hs.challenge);
  });
});
