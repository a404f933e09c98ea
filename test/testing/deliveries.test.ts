/**
 * The test kit against onceonly's own providers, for every sender and every sample type: a signed
 * delivery is processed once (then a duplicate), and the same delivery one byte off is refused
 * before the store or the handler. (Against the senders' own SDKs: test/sdks/kit.test.ts.)
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createReceiver, memoryStore, type Provider } from '../../src/index.js';
import * as providers from '../../src/providers/index.js';
import {
  type KeyTrust,
  providerOptions,
  SENDER_NAMES,
  type SenderName,
  type SignedDelivery,
  senders,
  signedDelivery,
  testKeys,
  testSecret,
} from '../../src/testing/index.js';

function credentialFor(name: SenderName) {
  const row = senders.find((s) => s.name === name)!;
  return row.credential === 'keys'
    ? { keys: testKeys(name as keyof KeyTrust) }
    : { secret: testSecret(name) };
}

function providerFor(name: SenderName, credential: ReturnType<typeof credentialFor>, url?: string) {
  const factory = (providers as unknown as Record<string, (o: unknown) => Provider<any, any>>)[name]!;
  return factory(providerOptions(name, { ...credential, url }));
}

/** The delivery with one byte of its body changed (a character inside the body, not its framing). */
export function oneByteOff(d: SignedDelivery): Request {
  const body = new Uint8Array(d.body);
  const at = Math.floor(body.length / 2);
  body[at] = body[at] === 0x31 ? 0x32 : 0x31;
  return new Request(d.url, { method: 'POST', headers: { ...d.headers }, body });
}

function receiverOf(provider: Provider<any, any>) {
  const seen: unknown[] = [];
  const store = memoryStore();
  const receiver = createReceiver({ provider, store, handler: (event) => void seen.push(event) });
  return { receiver, seen };
}

it('the kit signs for every provider of onceonly/providers but the generic hmac', () => {
  const exported = Object.keys(providers)
    .filter((name) => typeof (providers as Record<string, unknown>)[name] === 'function')
    .filter((name) => !['hmac', 'zoomUrlValidation'].includes(name))
    .sort();
  assert.deepEqual([...SENDER_NAMES].sort(), exported);
  assert.deepEqual(
    senders.map((s) => s.name),
    [...SENDER_NAMES].sort(),
  );
});

for (const sender of senders) {
  const name = sender.name as SenderName;
  describe(`signedDelivery('${name}')`, () => {
    for (const type of sender.types) {
      it(`${type}: processed once, then a duplicate; one byte off is refused`, async () => {
        const credential = credentialFor(name);
        const provider = providerFor(name, credential);
        const { receiver, seen } = receiverOf(provider);
        const d = signedDelivery(name, { ...credential, type });
        assert.equal(d.type, type);
        const first = await receiver.fetch(d.request());
        assert.equal(first.status, 200, `${name} ${type}: ${first.status} ${await first.clone().text()}`);
        assert.equal(first.headers.get('onceonly-outcome'), 'processed');
        const again = await receiver.fetch(d.request());
        assert.equal(again.headers.get('onceonly-outcome'), 'duplicate');
        assert.equal(seen.length, 1);
        if (sender.signsBody) {
          const off = await receiver.fetch(oneByteOff(d));
          assert.ok(off.status >= 400 && off.status < 500, `one byte off: ${off.status}`);
          assert.equal(seen.length, 1);
        } else {
          // A token sender's credential does not cover the body: one byte off the token instead.
          const forged = Object.fromEntries(
            Object.entries(d.headers).map(([k, v]) => [
              k,
              k === 'content-type' ? v : v.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
            ]),
          );
          const off = await receiver.fetch(
            new Request(d.url, { method: 'POST', headers: forged, body: d.text }),
          );
          assert.ok(off.status >= 400 && off.status < 500, `token one byte off: ${off.status}`);
        }
      });
    }

    it('signs a payload of your own byte for byte, and a delivery signed with another credential is refused', async () => {
      const credential = credentialFor(name);
      const first = signedDelivery(name, credential);
      const mine = signedDelivery(name, { ...credential, payload: first.text, id: first.id });
      assert.equal(mine.text, first.text);
      const { receiver, seen } = receiverOf(providerFor(name, credential));
      const ok = await receiver.fetch(mine.request());
      assert.equal(ok.status, 200, await ok.clone().text());
      const other = signedDelivery(name, { ...credentialFor(name), type: first.type });
      const refused = await receiver.fetch(other.request());
      assert.ok(refused.status >= 400 && refused.status < 500, `another credential: ${refused.status}`);
      assert.equal(seen.length, 1);
    });
  });
}
