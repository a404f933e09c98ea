/**
 * Inbox mode at the receiver (memory store; the SQL and Redis inboxes pass the same conformance
 * suite): durable accept answered at once, workers that retry with backoff and bury after
 * maxAttempts or maxAge, hybrid runs within an inline budget, re-verification, batches, the
 * handler context, and every state change reported and logged.
 */
import { strict as assert } from 'node:assert';
import { createHmac, sign as ecSign, generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  ConfigError,
  createReceiver,
  type DeliveryResult,
  type HandlerContext,
  hmac,
  type Logger,
  memoryStore,
  type Store,
} from '../src/index.js';
import { sendgrid } from '../src/providers/index.js';
import { sqliteStore } from '../src/stores/sqlite.js';
import { openSqlite } from './support/sqlite-client.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECRET = 'inbox-secret';

function acme(secret = SECRET) {
  return hmac<{ id: string; type: string; n?: number }>({
    name: 'acme',
    secret,
    signatureHeader: 'x-sig',
    id: (e) => e.id,
    type: (e) => e.type,
    typeSigned: true,
  });
}

function delivery(event: object, secret = SECRET): Request {
  const body = JSON.stringify(event);
  return new Request('https://example.com/hooks?route=1', {
    method: 'POST',
    body,
    headers: {
      'x-sig': createHmac('sha256', secret).update(body).digest('hex'),
      'content-type': 'application/json',
      'x-request-id': 'r-1',
      cookie: 'session=secret',
    },
  });
}

function recorder() {
  const lines: { level: string; message: string }[] = [];
  const logger: Logger = {
    warn: (message) => void lines.push({ level: 'warn', message }),
    error: (message) => void lines.push({ level: 'error', message }),
  };
  return { lines, logger };
}

function setup(options: Partial<Parameters<typeof createReceiver>[0]> = {}, store: Store = memoryStore()) {
  const outcomes: DeliveryResult[] = [];
  const { lines, logger } = recorder();
  const receiver = createReceiver({
    provider: acme(),
    store,
    inbox: { backoff: () => 20 },
    handler: () => {},
    onOutcome: (r) => void outcomes.push(r),
    logger,
    ...options,
  } as Parameters<typeof createReceiver>[0]);
  return { receiver, store, outcomes, lines };
}

describe('inbox mode: accept now, run later', () => {
  it('answers 202 accepted without running the handler; runDue runs it once; a redelivery is a duplicate, another body a conflict', async () => {
    const runs: string[] = [];
    const { receiver, store, outcomes } = setup({
      handler: ({ id }: HandlerContext<unknown>) => void runs.push(id!),
    });
    const res = await receiver.fetch(delivery({ id: 'evt_1', type: 't' }));
    assert.equal(res.status, 202);
    assert.equal(res.headers.get('onceonly-outcome'), 'accepted');
    assert.deepEqual(runs, [], 'nothing ran before the answer');
    assert.equal((await store.inbox!.get('acme:evt_1'))?.state, 'pending');
    assert.equal(await receiver.runDue(), 1);
    assert.deepEqual(runs, ['evt_1']);
    assert.equal((await store.inbox!.get('acme:evt_1'))?.state, 'completed');
    assert.equal(
      (await receiver.fetch(delivery({ id: 'evt_1', type: 't' }))).headers.get('onceonly-outcome'),
      'duplicate',
    );
    const other = await receiver.fetch(delivery({ id: 'evt_1', type: 't', n: 2 }));
    assert.equal(other.status, 422);
    assert.equal(await receiver.runDue(), 0);
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ['accepted', 'processed', 'duplicate', 'conflict'],
    );
    assert.equal(outcomes[1]?.inbox?.state, 'completed');
  });

  it('gives the handler the context of inline mode: event, type, id, key, attempt, signal, lease and the delivery with its headers', async () => {
    let seen: HandlerContext<unknown> | undefined;
    const { receiver } = setup({
      handler: (ctx: HandlerContext<unknown>) => {
        seen = ctx;
      },
    });
    await receiver.fetch(delivery({ id: 'evt_ctx', type: 'thing.created' }));
    await receiver.runDue();
    assert.ok(seen);
    assert.deepEqual(seen.event, { id: 'evt_ctx', type: 'thing.created' });
    assert.equal(seen.type, 'thing.created');
    assert.equal(seen.id, 'evt_ctx');
    assert.equal(seen.key, 'acme:evt_ctx');
    assert.equal(seen.attempt, 1);
    assert.ok(seen.signal instanceof AbortSignal);
    assert.equal(seen.lease?.attempt, 1);
    assert.equal(seen.delivery.headers.get('x-request-id'), 'r-1');
    assert.equal(seen.delivery.headers.get('cookie'), null, 'cookies are not kept');
    assert.equal(
      new TextDecoder().decode(seen.delivery.rawBody),
      JSON.stringify({ id: 'evt_ctx', type: 'thing.created' }),
    );
  });

  it('retries a failing entry after its backoff with attempt + 1, reporting and logging each failure, until it succeeds', async () => {
    const attempts: number[] = [];
    const { receiver, outcomes, lines } = setup({
      handler: ({ attempt }: HandlerContext<unknown>) => {
        attempts.push(attempt);
        if (attempt < 3) throw new Error(`payment API 502 on attempt ${attempt}`);
      },
    });
    await receiver.fetch(delivery({ id: 'evt_retry', type: 't' }));
    for (let i = 0; i < 10 && attempts.length < 3; i++) {
      await receiver.runDue();
      await sleep(30);
    }
    assert.deepEqual(attempts, [1, 2, 3]);
    const runs = outcomes.filter((o) => o.outcome !== 'accepted');
    assert.deepEqual(
      runs.map((o) => [o.outcome, o.attempt, o.inbox?.state]),
      [
        ['failed', 1, 'pending'],
        ['failed', 2, 'pending'],
        ['processed', 3, 'completed'],
      ],
    );
    assert.ok(runs[0]?.inbox?.nextAttemptAt instanceof Date);
    assert.deepEqual(
      lines.map((l) => l.level),
      ['error', 'error'],
    );
    assert.match(
      lines[0]!.message,
      /failed for acme:evt_retry \(attempt 1\): handler_failed: Error: payment API 502 on attempt 1; the inbox retries it at /,
    );
  });

  it('buries an entry after maxAttempts (dead, kept, logged), and the sender redelivering it requeues it', async () => {
    let fail = true;
    const { receiver, store, outcomes, lines } = setup({
      inbox: { backoff: () => 0, maxAttempts: 2 },
      handler: () => {
        if (fail) throw new Error('down');
      },
    });
    await receiver.fetch(delivery({ id: 'evt_dead', type: 't' }));
    await receiver.runDue();
    await receiver.runDue();
    const view = await store.inbox!.get('acme:evt_dead');
    assert.equal(view?.state, 'dead');
    assert.match(view?.lastError ?? '', /down \(attempt 2\)/);
    assert.equal(outcomes.at(-1)?.outcome, 'dead');
    assert.match(lines.at(-1)?.message ?? '', /dead in the inbox: acme:evt_dead .*requeue/);
    assert.equal(await receiver.runDue(), 0, 'a dead entry is not retried');
    fail = false;
    // GitHub's "Redeliver" button: the same delivery again brings it back.
    const again = await receiver.fetch(delivery({ id: 'evt_dead', type: 't' }));
    assert.equal(again.headers.get('onceonly-outcome'), 'accepted');
    assert.equal(await receiver.runDue(), 1);
    assert.equal((await store.inbox!.get('acme:evt_dead'))?.state, 'completed');
  });

  it('buries an entry older than maxAge at its next failure', async () => {
    const { receiver, store } = setup({
      inbox: { backoff: () => 0, maxAttempts: 100, maxAge: 50 },
      handler: () => {
        throw new Error('down');
      },
    });
    await receiver.fetch(delivery({ id: 'evt_old', type: 't' }));
    await receiver.runDue();
    assert.equal((await store.inbox!.get('acme:evt_old'))?.state, 'pending');
    await sleep(80);
    await receiver.runDue();
    const view = await store.inbox!.get('acme:evt_old');
    assert.equal(view?.state, 'dead');
    assert.match(view?.lastError ?? '', /past maxAge/);
  });

  it('buries an entry that no longer verifies (the secret rotated out before the inbox drained)', async () => {
    const store = memoryStore();
    const first = setup({ name: 'acme' }, store);
    await first.receiver.fetch(delivery({ id: 'evt_rot', type: 't' }));
    const rotated = createReceiver({
      // The same receiver in a later deploy, its secret rotated (named, as it shares the space).
      name: 'acme',
      provider: acme('the-new-secret'),
      store,
      inbox: { maxAttempts: 3, backoff: () => 10 },
      handler: () => assert.fail('must not run'),
      logger: false,
    });
    // Accepted under another identity (the old secret's), it could be another app's entry: left
    // for it until its attempts are spent, then buried.
    for (let i = 0; i < 20 && (await store.inbox!.get('acme:evt_rot'))?.state !== 'dead'; i++) {
      assert.equal(await rotated.runDue(), 1);
      await sleep(20);
    }
    const view = await store.inbox!.get('acme:evt_rot');
    assert.equal(view?.attempts, 3);
    assert.equal(view?.state, 'dead');
    assert.match(view?.lastError ?? '', /no longer verifies/);
  });

  it('buries an entry damaged in the store (SQLite row edited by hand), reported dead, while the entry beside it runs', async () => {
    const db = openSqlite(':memory:');
    try {
      const runs: string[] = [];
      const { receiver, outcomes, lines } = setup(
        { handler: ({ id }: HandlerContext<unknown>) => void runs.push(id!) },
        sqliteStore({ client: db.client }),
      );
      assert.equal((await receiver.fetch(delivery({ id: 'evt_dmg', type: 't' }))).status, 202);
      assert.equal((await receiver.fetch(delivery({ id: 'evt_ok', type: 't' }))).status, 202);
      const damaged = db
        .prepare(`UPDATE "onceonly_inbox" SET meta = 'not json' WHERE entry_key = ?`)
        .run('acme:evt_dmg');
      assert.equal(damaged.changes, 1, 'the row was damaged');
      assert.equal(await receiver.runDue(), 2);
      assert.deepEqual(runs, ['evt_ok']);
      const dead = outcomes.find((o) => o.outcome === 'dead');
      assert.equal(dead?.key, 'acme:evt_dmg');
      assert.equal(dead?.code, 'inbox_unrunnable');
      assert.ok(
        lines.some((l) => l.level === 'error' && /could not be read back/.test(l.message)),
        JSON.stringify(lines),
      );
    } finally {
      db.close();
    }
  });

  it('re-verifies with the time the delivery arrived, so the timestamp tolerance holds for a run a day later', async () => {
    // Stripe-style tolerance: what arrived in time still verifies when a worker runs it a day later.
    const provider = hmac<{ id: string }>({
      name: 'timed',
      secret: SECRET,
      signatureHeader: 'x-sig',
      timestampHeader: 'x-ts',
      id: (e) => e.id,
    });
    const store = memoryStore();
    let ran = 0;
    const receiver = createReceiver({
      provider,
      store,
      inbox: true,
      handler: () => void ran++,
      logger: false,
    });
    const body = JSON.stringify({ id: 'evt_ts' });
    const dayAgo = Date.now() - 86_400_000;
    const ts = Math.floor(dayAgo / 1000);
    const sig = createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex');
    const accepted = await receiver.receive({
      rawBody: body,
      headers: { 'x-sig': sig, 'x-ts': String(ts) },
      receivedAt: new Date(dayAgo), // it arrived a day ago, in time
    });
    assert.equal(accepted.outcome, 'accepted');
    assert.equal(await receiver.runDue(), 1);
    assert.equal(ran, 1);
  });
});

describe('hybrid mode: inline within a budget, the inbox past it', () => {
  it('a fast handler answers 200 processed inline, as inline mode does', async () => {
    let ran = 0;
    const { receiver, store } = setup({ inbox: { inline: '500ms' }, handler: () => void ran++ });
    const res = await receiver.fetch(delivery({ id: 'evt_fast', type: 't' }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
    assert.equal(ran, 1);
    assert.equal((await store.inbox!.get('acme:evt_fast'))?.state, 'completed');
    assert.equal(await receiver.runDue(), 0);
  });

  it('a failing handler answers 202 accepted; the inbox retries it at attempt 2', async () => {
    const attempts: number[] = [];
    const { receiver, lines } = setup({
      inbox: { inline: '500ms', backoff: () => 0 },
      handler: ({ attempt }: HandlerContext<unknown>) => {
        attempts.push(attempt);
        if (attempt === 1) throw new Error('flaky');
      },
    });
    const res = await receiver.fetch(delivery({ id: 'evt_flaky', type: 't' }));
    assert.equal(res.status, 202);
    assert.equal(res.headers.get('onceonly-outcome'), 'accepted');
    assert.match(lines[0]?.message ?? '', /inline run failed for acme:evt_flaky .*the inbox has it/);
    assert.equal(await receiver.runDue(), 1);
    assert.deepEqual(attempts, [1, 2]);
  });

  it('a 30 s handler is answered at the budget (GitHub waits 10 s), keeps its lease, and no worker runs it meanwhile', async () => {
    let runs = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const { receiver, store, outcomes } = setup({
      inbox: { inline: '200ms' },
      lease: '1s', // extended while the handler runs: a worker must not take it
      timeout: '30s',
      handler: async () => {
        runs++;
        await finished;
      },
    });
    const started = Date.now();
    const res = await receiver.fetch(delivery({ id: 'evt_slow', type: 't' }));
    const took = Date.now() - started;
    assert.equal(res.status, 202);
    assert.equal(res.headers.get('onceonly-outcome'), 'accepted');
    assert.ok(took < 1_000, `answered after ${took} ms`);
    assert.equal((await store.inbox!.get('acme:evt_slow'))?.state, 'processing');
    await sleep(1_500); // past the first lease length: only the heartbeat keeps it
    assert.equal(await receiver.runDue(), 0, 'the running entry is not taken');
    finish();
    await sleep(50);
    assert.equal(runs, 1);
    assert.equal((await store.inbox!.get('acme:evt_slow'))?.state, 'completed');
    assert.equal(outcomes.at(-1)?.outcome, 'processed', 'the end of the run past its budget is reported');
  });
});

describe('inbox mode: workers, batches, configuration', () => {
  it('a started worker runs an entry accepted in this process at once, retries it, and stops after its runs end', async () => {
    const attempts: number[] = [];
    const { receiver } = setup({
      inbox: { backoff: () => 10 },
      handler: ({ attempt }: HandlerContext<unknown>) => {
        attempts.push(attempt);
        if (attempt === 1) throw new Error('once');
      },
    });
    const worker = receiver.startWorker({ pollInterval: '10s', concurrency: 2 });
    const started = Date.now();
    await receiver.fetch(delivery({ id: 'evt_w', type: 't' }));
    while (attempts.length < 1 && Date.now() - started < 2_000) await sleep(5);
    assert.ok(Date.now() - started < 1_000, 'woken by the accept, not the 10 s poll');
    await worker.stop();
    assert.equal(worker.runs, 1);
    assert.deepEqual(attempts, [1]);
    // Bounded from its own start (not the first worker's), generously: the loop ends at the retry.
    const second = receiver.startWorker({ pollInterval: '20ms' });
    const secondStarted = Date.now();
    while (attempts.length < 2 && Date.now() - secondStarted < 10_000) await sleep(10);
    await second.stop();
    assert.deepEqual(attempts, [1, 2]);
  });

  it('a worker killed mid-handler loses nothing: its lease runs out and the next take runs it at attempt 2', async () => {
    const store = memoryStore();
    const { receiver } = setup({ name: 'acme', lease: '200ms', timeout: '100ms' }, store);
    await receiver.fetch(delivery({ id: 'evt_kill', type: 't' }));
    // A worker takes it and dies: no complete, no retry.
    const [job] = await store.inbox!.take({ limit: 1, leaseMs: 200, receiver: 'acme' });
    assert.equal(job?.lease.attempt, 1);
    assert.equal(await receiver.runDue(), 0, 'leased');
    await sleep(300);
    const attempts: number[] = [];
    const after = createReceiver({
      name: 'acme', // another worker process of the same receiver
      provider: acme(),
      store,
      inbox: true,
      handler: ({ attempt }) => void attempts.push(attempt),
      logger: false,
    });
    assert.equal(await after.runDue(), 1);
    assert.deepEqual(attempts, [2]);
  });

  it('an event that kills every worker that runs it (a poison message) is buried once its attempts are spent, not run again', async () => {
    const store = memoryStore();
    const runs: number[] = [];
    const { receiver, outcomes, lines } = setup(
      {
        name: 'acme',
        lease: '200ms',
        timeout: '100ms',
        inbox: { maxAttempts: 2, backoff: () => 20 },
        handler: ({ attempt }: HandlerContext<unknown>) => void runs.push(attempt),
      },
      store,
    );
    await receiver.fetch(delivery({ id: 'evt_poison', type: 't' }));
    // Two workers take it in turn and die with it: no complete, no retry, their leases run out.
    for (const attempt of [1, 2]) {
      const [job] = await store.inbox!.take({ limit: 1, leaseMs: 200, receiver: 'acme' });
      assert.equal(job?.lease.attempt, attempt, 'a worker took it');
      await sleep(300);
    }
    // The next worker finds its two attempts spent: it buries the entry instead of a third crash.
    assert.equal(await receiver.runDue(), 1);
    assert.deepEqual(runs, [], 'never run again');
    const dead = outcomes.find((o) => o.outcome === 'dead');
    assert.equal(dead?.attempt, 3);
    assert.equal((await store.inbox!.get('acme:evt_poison'))?.state, 'dead');
    assert.match(
      (await store.inbox!.get('acme:evt_poison'))?.lastError ?? '',
      /attempts spent: Error: its run at attempt 2 ended without a verdict/,
    );
    assert.ok(lines.some((l) => l.level === 'error' && /attempts are spent/.test(l.message)));
    // Requeued by an operator, it runs again (pending, not taken over).
    assert.equal(await store.inbox!.requeue({ key: 'acme:evt_poison' }), 1);
    assert.equal(await receiver.runDue(), 1);
    assert.deepEqual(runs, [4]);
  });

  for (const via of ['runDue', 'a worker'] as const) {
    it(`a take whose reply comes after storeTimeout hands its entries back at once, so a one-attempt entry still runs (${via})`, async () => {
      const store = memoryStore();
      const box = store.inbox!;
      const take = box.take.bind(box);
      let taken = 0;
      let lateReply!: () => void;
      const replied = new Promise<void>((resolve) => {
        lateReply = resolve;
      });
      // The store takes the entry, but its reply comes after the deadline (a slow store).
      box.take = async (options) => {
        const jobs = await take(options);
        if (taken++ === 0) {
          await sleep(300);
          lateReply();
        }
        return jobs;
      };
      const runs: number[] = [];
      const { receiver, outcomes } = setup(
        {
          name: 'acme',
          lease: '5s',
          timeout: '1s',
          storeTimeout: '50ms',
          inbox: { maxAttempts: 1 },
          handler: ({ attempt }: HandlerContext<unknown>) => void runs.push(attempt),
        },
        store,
      );
      assert.equal((await receiver.fetch(delivery({ id: 'evt_late_take', type: 't' }))).status, 202);
      if (via === 'runDue') {
        await assert.rejects(receiver.runDue(), /take/, 'the take passed its deadline');
        await replied;
        await sleep(50);
        // Handed back due now, not leased for 5 s and then buried as taken over at attempt 2.
        assert.equal(await receiver.runDue(), 1);
      } else {
        const worker = receiver.startWorker({ pollInterval: '20ms' });
        await replied;
        for (let i = 0; i < 100 && runs.length === 0; i++) await sleep(20);
        await worker.stop();
        assert.ok(
          outcomes.some((o) => o.outcome === 'store-unavailable'),
          'the take passed its deadline',
        );
      }
      assert.equal(taken >= 2, true, 'taken again');
      assert.deepEqual(runs, [2], 'its handler ran, once');
      assert.equal((await box.get('acme:evt_late_take'))?.state, 'completed');
      assert.ok(!outcomes.some((o) => o.outcome === 'dead'));
    });
  }

  it('a burial that does not land (the lease lost, or the store failing) is reported failed, never dead', async () => {
    const store = memoryStore();
    const box = store.inbox!;
    const { receiver, outcomes } = setup(
      { name: 'acme', lease: '200ms', timeout: '100ms', inbox: { maxAttempts: 1 } },
      store,
    );
    await receiver.fetch(delivery({ id: 'evt_unburied', type: 't' }));
    // A worker takes it and dies: its one attempt is spent.
    assert.equal((await box.take({ limit: 1, leaseMs: 200, receiver: 'acme' })).length, 1);
    await sleep(300);
    let buries = 0;
    box.bury = async () => {
      buries++;
      return false; // another worker took it meanwhile
    };
    assert.equal(await receiver.runDue(), 1);
    assert.equal(buries, 1, 'the worker tried to bury it');
    const last = outcomes.at(-1)!;
    assert.equal(last.outcome, 'failed');
    assert.equal(last.inbox, undefined, 'no inbox state claimed for it');
    assert.ok(!outcomes.some((o) => o.outcome === 'dead'));
    assert.notEqual((await box.get('acme:evt_unburied'))?.state, 'dead');
  });

  it('a SendGrid batch is kept as one entry per event, each run on its own', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const payload = JSON.stringify([
      { sg_event_id: 'sg_1', event: 'delivered', email: 'a@example.com' },
      { sg_event_id: 'sg_2', event: 'open', email: 'b@example.com' },
    ]);
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = {
      'x-twilio-email-event-webhook-signature': ecSign(
        'sha256',
        Buffer.from(ts + payload),
        privateKey,
      ).toString('base64'),
      'x-twilio-email-event-webhook-timestamp': ts,
    };
    const seen: string[] = [];
    const store = memoryStore();
    const receiver = createReceiver({
      provider: sendgrid({ publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') }),
      store,
      inbox: true,
      on: {
        delivered: ({ id }) => void seen.push(`delivered:${id}`),
        open: ({ id }) => void seen.push(`open:${id}`),
      },
      logger: false,
    });
    const result = await receiver.receive({ rawBody: payload, headers });
    assert.equal(result.status, 202);
    assert.deepEqual(
      result.batch?.map((r) => r.outcome),
      ['accepted', 'accepted'],
    );
    assert.equal(await receiver.runDue(), 2);
    assert.deepEqual(seen.sort(), ['delivered:sg_1', 'open:sg_2']);
  });

  it('a header map with a name no HTTP header can have is refused 400 malformed_header, never a store error; pseudo-headers are left out', async () => {
    // Prepare: a correctly signed body, its headers as a plain object (receive()'s own input), one
    // name invalid (a space).
    const { receiver, store } = setup({ name: 'acme' });
    const body = JSON.stringify({ id: 'evt_badname', type: 't' });
    const sig = createHmac('sha256', SECRET).update(body).digest('hex');
    // Act
    const result = await receiver.receive({
      rawBody: Buffer.from(body),
      headers: { 'x-sig': sig, 'bad name': 'x' },
    });
    // Assess: a stable 4xx (was 503 store_unavailable, which the sender retries for ever); nothing kept.
    assert.deepEqual([result.outcome, result.status, result.code], ['rejected', 400, 'malformed_header']);
    assert.equal(await store.inbox!.get('acme:evt_badname'), undefined);
    // HTTP/2's pseudo-headers (Node lists them among a request's headers) are not headers: left
    // out, and so is a request's own attempt at the accepting-receiver stamp.
    const h2 = await receiver.receive({
      rawBody: Buffer.from(body),
      headers: { 'x-sig': sig, ':method': 'POST', ':path': '/hooks', ':onceonly-accepted-by': 'forged' },
    });
    assert.equal(h2.outcome, 'accepted');
    const kept = (await store.inbox!.get('acme:evt_badname'))?.delivery?.headers ?? [];
    assert.deepEqual(
      kept.filter(([n]) => n.startsWith(':')).map(([n, v]) => [n, v === 'forged' ? 'forged' : 'stamp']),
      [[':onceonly-accepted-by', 'stamp']],
    );
  });

  it('refuses inbox mode over a store without an inbox', () => {
    const { inbox: _, ...plain } = memoryStore();
    assert.throws(
      () => createReceiver({ provider: acme(), store: plain as Store, inbox: true, handler: () => {} }),
      (error: unknown) => error instanceof ConfigError && /inbox/.test(error.message),
    );
    assert.throws(
      () => createReceiver({ provider: acme(), store: memoryStore(), handler: () => {} }).startWorker(),
      /inbox mode/,
    );
  });

  it('a store that fails the accept answers 503 (fail-closed), and runs degraded under fail-open', async () => {
    const broken = (): Store => {
      const s = memoryStore();
      return { ...s, inbox: { ...s.inbox!, accept: () => Promise.reject(new Error('ECONNREFUSED')) } };
    };
    let ran = 0;
    const closed = setup({ handler: () => void ran++ }, broken());
    assert.equal((await closed.receiver.fetch(delivery({ id: 'evt_down', type: 't' }))).status, 503);
    const open = setup({ onStoreError: 'open', handler: () => void ran++ }, broken());
    const res = await open.receiver.fetch(delivery({ id: 'evt_down', type: 't' }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-degraded'), 'store-unavailable');
    assert.equal(ran, 1);
  });
});
