/**
 * The DynamoDB store with keys as senders' ids and your own keys can be: lone UTF-16 surrogates and
 * NUL (two different keys stay two, as on the memory store and every other store), and keys of a
 * megabyte (past the 400 KB an item holds): every one goes through its whole life on dynalite.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import { type Dynalite, dynamoClient, startDynalite } from '../../test/support/dynalite.js';
import type { Claim, Lease } from '../core/types.js';
import { dynamoDbStore } from './dynamodb.js';

const server: Dynalite = await startDynalite();
const client = dynamoClient(server.endpoint);
const table = await server.table('keys');
after(async () => {
  client.destroy();
  await server.stop();
});
const store = dynamoDbStore({ client, table, maxClockSkew: 50 });
const LONG = 60_000;
let seq = 0;
const base = () => `keys-${++seq}-${Math.random().toString(36).slice(2)}`;

function acquired(claim: Claim): Lease {
  assert.equal(claim.status, 'acquired', JSON.stringify(claim));
  return (claim as Extract<Claim, { status: 'acquired' }>).lease;
}

describe('dynamoDbStore: keys that are no plain text', () => {
  const pairs: [string, (b: string) => [string, string]][] = [
    ['lone high surrogates', (b) => [`${b}\ud800`, `${b}\udbff`]],
    ['lone low surrogates', (b) => [`${b}\udc00`, `${b}\udfff`]],
    ['a lone surrogate and U+FFFD', (b) => [`${b}\ud800`, `${b}\ufffd`]],
    ['NUL and no NUL', (b) => [`${b}\0`, b]],
  ];
  for (const [name, make] of pairs) {
    it(`${name}: two keys, each claimed, confirmed and inspected apart`, async () => {
      const [a, b] = make(base());
      const la = acquired(await store.claim(a, { leaseMs: LONG }));
      const lb = acquired(await store.claim(b, { leaseMs: LONG }));
      assert.equal(await store.confirm(la, { retentionMs: LONG }), true);
      assert.equal((await store.inspect(a))?.state, 'completed');
      assert.equal((await store.inspect(b))?.state, 'processing', 'b is its own key');
      assert.equal((await store.inspect(a))?.key, a, 'inspect names the key as given');
      assert.equal(await store.confirm(lb, { retentionMs: LONG }), true);
    });

    it(`${name}: record() and the ordering guard keep them apart`, async () => {
      const [a, b] = make(base());
      assert.deepEqual(await store.record(a, { retentionMs: LONG }), { duplicate: false });
      assert.deepEqual(await store.record(b, { retentionMs: LONG }), { duplicate: false });
      assert.equal(await store.advance(a, 5), true);
      assert.equal(await store.advance(b, 3), true, "b's version is its own");
    });
  }
});

describe('dynamoDbStore: a key of a megabyte', () => {
  it('goes through its whole life (claim, step, release, takeover, confirm, duplicate), apart from one a character longer', async () => {
    const key = `${base()}:${'x'.repeat(1024 * 1024)}`;
    const lease = acquired(await store.claim(key, { leaseMs: LONG, retentionMs: LONG }));
    assert.equal(await store.steps!.save(lease, 'charge', '"ch_1"'), true);
    assert.equal(await store.release(lease), true);
    const again = acquired(await store.claim(key, { leaseMs: LONG }));
    assert.equal(again.attempt, 2);
    assert.deepEqual([...(await store.steps!.load(again))], [['charge', '"ch_1"']]);
    assert.equal(await store.extend(again, { leaseMs: LONG }), true);
    assert.equal((await store.claim(`${key}y`, { leaseMs: LONG })).status, 'acquired');
    assert.equal(await store.confirm(again, { retentionMs: LONG }), true);
    assert.equal((await store.claim(key, { leaseMs: LONG })).status, 'completed');
    const view = await store.inspect(key);
    assert.equal(view?.state, 'completed');
    assert.equal(view?.key, key);
    assert.deepEqual(await store.record(key, { retentionMs: LONG }), { duplicate: true });
    assert.equal(await store.advance(key, 1), true);
  });
});

describe("dynamoDbStore's inbox: keys with lone surrogates", () => {
  it('two keys that differ only in a lone surrogate are two entries, each taken and completed', async () => {
    const b = base();
    const receiver = `keys${Math.random().toString(36).slice(2, 8)}`;
    const accept = (key: string) =>
      store.inbox!.accept({
        key,
        receiver,
        fingerprint: 'fp',
        body: new TextEncoder().encode('{}'),
        headers: [],
        receivedAt: new Date(),
      });
    assert.equal((await accept(`${b}\ud800`)).status, 'accepted');
    assert.equal((await accept(`${b}\udbff`)).status, 'accepted', 'its own entry, not a duplicate');
    const jobs = await store.inbox!.take({ limit: 10, leaseMs: LONG, receiver });
    assert.deepEqual(jobs.map((job) => job.key).sort(), [`${b}\ud800`, `${b}\udbff`].sort());
    for (const job of jobs) assert.equal(await store.inbox!.complete(job.lease, { retentionMs: LONG }), true);
  });
});
