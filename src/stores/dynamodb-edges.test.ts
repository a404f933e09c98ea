/**
 * The DynamoDB store at its edges, on dynalite: a host whose clock runs ahead past `maxClockSkew`
 * (it takes a live lease over, and the fencing still holds: the first owner's writes are refused),
 * and two endpoints (two receivers, two key spaces) sharing one table, in claim and inbox mode.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { type Dynalite, dynamoClient, startDynalite } from '../../test/support/dynalite.js';
import type { Claim, Lease } from '../core/types.js';
import { createReceiver, hmac } from '../index.js';
import { dynamoDbStore } from './dynamodb.js';

const server: Dynalite = await startDynalite();
const client = dynamoClient(server.endpoint);
const table = await server.table('edges');
after(async () => {
  client.destroy();
  await server.stop();
});
const unique = () => `edges:${Math.random().toString(36).slice(2)}`;

function acquired(claim: Claim): Lease {
  assert.equal(claim.status, 'acquired', JSON.stringify(claim));
  return (claim as Extract<Claim, { status: 'acquired' }>).lease;
}

describe('dynamoDbStore: a clock ahead past maxClockSkew', () => {
  it('takes a live lease over (as documented), and the first owner is fenced: confirm, extend, release and steps refused', async () => {
    const base = Date.now();
    const a = dynamoDbStore({ client, table, maxClockSkew: '1s', now: () => base });
    // B's clock runs 40 s ahead: past A's 30 s lease and the 1 s bound.
    const b = dynamoDbStore({ client, table, maxClockSkew: '1s', now: () => base + 40_000 });
    const key = unique();
    const first = acquired(await a.claim(key, { leaseMs: 30_000, retentionMs: 60_000 }));
    assert.equal(await a.steps!.save(first, 'charge', '"ch_1"'), true);
    const second = acquired(await b.claim(key, { leaseMs: 30_000 }));
    assert.equal(second.attempt, 2, 'taken over: the fault the bound exists for');
    assert.deepEqual([...(await b.steps!.load(second))], [['charge', '"ch_1"']], 'with the steps');
    assert.equal(await a.extend(first, { leaseMs: 30_000 }), false);
    assert.equal(await a.steps!.save(first, 'refund', '"re_1"'), false);
    assert.equal(await a.release(first), false);
    assert.equal(await a.confirm(first, { retentionMs: 60_000 }), false, 'the stale owner cannot confirm');
    assert.equal(await b.confirm(second, { retentionMs: 60_000 }), true);
    assert.equal((await a.inspect(key))?.attempt, 2);
  });

  it('a clock behind by more than the bound does not take a live lease', async () => {
    const base = Date.now();
    const a = dynamoDbStore({ client, table, maxClockSkew: '1s', now: () => base });
    const behind = dynamoDbStore({ client, table, maxClockSkew: '1s', now: () => base - 10_000 });
    const key = unique();
    acquired(await a.claim(key, { leaseMs: 5_000 }));
    assert.equal((await behind.claim(key, { leaseMs: 5_000 })).status, 'in-flight');
  });
});

describe('dynamoDbStore: two endpoints on one table', () => {
  const store = dynamoDbStore({ client, table, maxClockSkew: 50 });
  const secret = 'edges-secret';
  const send = (receiver: ReturnType<typeof createReceiver>, id: string) => {
    const body = JSON.stringify({ id });
    const sig = createHmac('sha256', secret).update(body).digest('hex');
    return receiver.fetch(
      new Request('https://example.com/hooks', { method: 'POST', body, headers: { 'x-sig': sig } }),
    );
  };
  const endpoint = (name: string, runs: string[], inbox: boolean) =>
    createReceiver({
      provider: hmac<{ id: string }>({ name, secret, signatureHeader: 'x-sig', id: (e) => e.id }),
      store,
      logger: false,
      ...(inbox ? { inbox: { backoff: () => 20 } } : {}),
      handler: ({ id }) => void runs.push(`${name}:${id}`),
    });

  it('claim mode: one event id at both is two deliveries, each processed once', async () => {
    const runs: string[] = [];
    const tag = Math.random().toString(36).slice(2, 8);
    const a = endpoint(`a${tag}`, runs, false);
    const b = endpoint(`b${tag}`, runs, false);
    for (const r of [a, b, a, b]) await send(r, 'evt_1');
    assert.deepEqual(runs.sort(), [`a${tag}:evt_1`, `b${tag}:evt_1`]);
  });

  it("inbox mode: each endpoint's runDue runs its own entries only", async () => {
    const runs: string[] = [];
    const tag = Math.random().toString(36).slice(2, 8);
    const a = endpoint(`ia${tag}`, runs, true);
    const b = endpoint(`ib${tag}`, runs, true);
    assert.equal((await send(a, 'evt_1')).status, 202);
    assert.equal((await send(b, 'evt_1')).status, 202);
    assert.equal((await send(b, 'evt_2')).status, 202);
    assert.equal(await a.runDue(), 1);
    assert.deepEqual(runs, [`ia${tag}:evt_1`]);
    assert.equal(await b.runDue(), 2);
    assert.deepEqual(runs.sort(), [`ia${tag}:evt_1`, `ib${tag}:evt_1`, `ib${tag}:evt_2`]);
    assert.equal(await a.runDue(), 0);
  });
});
