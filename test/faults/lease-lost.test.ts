/**
 * A handler that outlives its lease while a second delivery takes over. The first owner's extends
 * cannot reach the store (a partition), its lease runs out, the second delivery claims attempt 2
 * and finishes; then the first handler finishes: its confirm reports `lease-lost` (200, reported to
 * onOutcome), and its write, fenced by `attempt`, is rejected by the database. Without the fence the
 * stale write overwrites the newer one: shown too. Real PostgreSQL for both the store and the effect.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { Store } from '../../src/core/types.js';
import { stripe } from '../../src/providers/stripe.js';
import { createReceiver, type DeliveryResult } from '../../src/receiver/receiver.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { reachable, servers } from '../support/servers.js';

const pool = new pg.Pool({ connectionString: servers.postgres, max: 6 });
pool.on('error', () => {});
const up = await reachable('PostgreSQL (lease-lost fencing)', servers.postgres, () => pool.query('SELECT 1'));
if (!up) await pool.end();

const secret = 'whsec_0123456789abcdef0123456789abcdef';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function signed(id: string): Request {
  const body = JSON.stringify({
    id,
    object: 'event',
    type: 'invoice.paid',
    data: { object: { id: 'in_1' } },
  });
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return new Request('https://example.com/hooks', {
    method: 'POST',
    body,
    headers: { 'stripe-signature': `t=${t},v1=${v1}`, 'content-type': 'application/json' },
  });
}

if (up) {
  describe('a handler that outlives its lease (PostgreSQL)', () => {
    const run = randomBytes(4).toString('hex');
    const table = `onceonly_leaselost_${run}`;
    const fenced = `fault_fenced_${run}`;
    const plain = `fault_plain_${run}`;
    before(async () => {
      await pool.query(
        `CREATE TABLE ${fenced} (invoice TEXT PRIMARY KEY, paid_by TEXT NOT NULL, attempt INT NOT NULL)`,
      );
      await pool.query(`CREATE TABLE ${plain} (invoice TEXT PRIMARY KEY, paid_by TEXT NOT NULL)`);
    });
    after(async () => {
      for (const t of [fenced, plain, table, `${table}_versions`])
        await pool.query(`DROP TABLE IF EXISTS ${t}`);
      await pool.end();
    });

    it('the stale owner gets lease-lost, and its fenced write is rejected while the plain one overwrites', async () => {
      // Arrange: one store on one database; owner A's extends are cut off from it. Its tables are
      // made first: made by the first claim, under a loaded CI's DDL they once took longer than
      // this lease's store deadline (300 ms), A answered 503 unrun, and the test waited forever.
      const store = postgresStore({ client: pool, table });
      await store.ready();
      const partitioned: Store = {
        ...store,
        claim: (...a) => store.claim(...a),
        confirm: (...a) => store.confirm(...a),
        release: (...a) => store.release(...a),
        record: (...a) => store.record(...a),
        advance: (...a) => store.advance(...a),
        inspect: (...a) => store.inspect(...a),
        close: () => store.close(),
        extend: () => Promise.reject(new Error('ETIMEDOUT: partitioned from the store')),
      };
      const outcomes: { who: string; result: DeliveryResult }[] = [];
      const writes: Record<string, number> = {};
      let releaseA!: () => void;
      const aMayFinish = new Promise<void>((resolve) => {
        releaseA = resolve;
      });
      let aStarted!: () => void;
      const aRunning = new Promise<void>((resolve) => {
        aStarted = resolve;
      });

      const handlerFor =
        (who: string, wait?: Promise<void>) =>
        async ({ attempt }: { attempt: number }) => {
          if (wait) {
            aStarted();
            await wait;
          }
          // The fencing pattern: the write carries the attempt and only a newer or equal one lands.
          const f = await pool.query(
            `INSERT INTO ${fenced} (invoice, paid_by, attempt) VALUES ('in_1', $1, $2)
             ON CONFLICT (invoice) DO UPDATE SET paid_by = EXCLUDED.paid_by, attempt = EXCLUDED.attempt
             WHERE ${fenced}.attempt <= EXCLUDED.attempt`,
            [who, attempt],
          );
          writes[who] = f.rowCount ?? 0;
          // Without the fence: last writer wins, stale or not.
          await pool.query(
            `INSERT INTO ${plain} (invoice, paid_by) VALUES ('in_1', $1)
             ON CONFLICT (invoice) DO UPDATE SET paid_by = EXCLUDED.paid_by`,
            [who],
          );
        };
      const receiverA = createReceiver({
        provider: stripe({ secret }),
        store: partitioned,
        timeout: '5s',
        lease: '600ms',
        handler: handlerFor('A', aMayFinish),
        onOutcome: (result) => outcomes.push({ who: 'A', result }),
      });
      const receiverB = createReceiver({
        provider: stripe({ secret }),
        store,
        timeout: '5s',
        lease: '600ms',
        handler: handlerFor('B'),
        onOutcome: (result) => outcomes.push({ who: 'B', result }),
      });

      // Act: A claims and stalls past its lease; B's retry takes over; then A finishes.
      const a = receiverA.fetch(signed(`evt_${run}`));
      const early = await Promise.race([aRunning.then(() => undefined), a]);
      assert.equal(
        early,
        undefined,
        `A answered before its handler ran: ${early?.status} ${early?.headers.get('onceonly-outcome')}`,
      );
      await sleep(1_000);
      const b = await receiverB.fetch(signed(`evt_${run}`));
      releaseA();
      const aRes = await a;

      // Assert
      assert.equal(b.status, 200);
      assert.equal(b.headers.get('onceonly-outcome'), 'processed');
      assert.equal(aRes.status, 200, 'our work is done: lease-lost answers 200');
      assert.equal(aRes.headers.get('onceonly-outcome'), 'lease-lost');
      const aOutcome = outcomes.find((o) => o.who === 'A')?.result;
      const bOutcome = outcomes.find((o) => o.who === 'B')?.result;
      assert.equal(aOutcome?.outcome, 'lease-lost', 'onOutcome saw the lost lease');
      assert.equal(aOutcome?.attempt, 1);
      assert.equal(bOutcome?.outcome, 'processed');
      assert.equal(bOutcome?.attempt, 2);
      assert.deepEqual(writes, { B: 1, A: 0 }, 'the stale attempt-1 write was rejected by the fence');
      const f = await pool.query(`SELECT paid_by, attempt FROM ${fenced}`);
      assert.deepEqual(f.rows, [{ paid_by: 'B', attempt: 2 }]);
      const p = await pool.query(`SELECT paid_by FROM ${plain}`);
      assert.deepEqual(
        p.rows,
        [{ paid_by: 'A' }],
        'without the fence the stale owner overwrote the newer write',
      );
      const view = await store.inspect(`stripe:evt_${run}`);
      assert.equal(view?.state, 'completed');
      assert.equal(view?.attempt, 2);
      console.log(
        `[fault figures] lease lost: A outcome ${aOutcome?.outcome} (attempt 1, HTTP ${aRes.status}), B ${bOutcome?.outcome} (attempt 2); fenced write A rows=${writes.A}, plain table ends with ${p.rows[0]?.paid_by}`,
      );
    });
  });
}
