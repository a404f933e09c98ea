/**
 * What the receiver's split into stages must not have changed, each found by a review of the split
 * and pinned here: a handler is called as a plain function (`this` undefined, never an internal
 * record) on every path; a streamed body is received when it has been read whole; whatever a
 * provider's `verify` returns is its verification, never taken for an outcome; and a thenable from
 * a custom provider is taken as `await` takes it.
 */
import { strict as assert } from 'node:assert';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { createReceiver, type Handler, memoryStore, type Provider, VerificationError } from '../src/index.js';

/** A provider that trusts every body: `{ id }` JSON, keyed on the id. */
function plain(overrides: Partial<Provider> = {}): Provider {
  return {
    name: `plain${Math.random().toString(36).slice(2, 8)}`,
    retentionMs: 60_000,
    verify({ rawBody }) {
      const event = JSON.parse(Buffer.from(rawBody).toString('utf8')) as { id: string };
      return { event, id: event.id, dedup: 'id' };
    },
    ...overrides,
  };
}

const body = (id: string) => new TextEncoder().encode(JSON.stringify({ id }));

describe('the receiver as stages, as it was as one function', () => {
  it('calls the handler as a plain function (this is undefined) inline, unguarded, and in the inbox', async () => {
    const seen: unknown[] = [];
    // A `function` handler: with `this` bound to anything, it would see it.
    const handler: Handler<unknown> = function (this: unknown) {
      seen.push(this);
    };
    const inline = createReceiver({ provider: plain(), store: memoryStore(), handler });
    assert.equal((await inline.receive({ rawBody: body('a'), headers: {} })).outcome, 'processed');
    const unkeyed = createReceiver({
      provider: plain({ verify: () => ({ event: {}, dedup: 'none' }) }),
      store: memoryStore(),
      handler,
    });
    assert.equal((await unkeyed.receive({ rawBody: body('b'), headers: {} })).outcome, 'unkeyed');
    const inbox = createReceiver({ provider: plain(), store: memoryStore(), handler, inbox: true });
    assert.equal((await inbox.receive({ rawBody: body('c'), headers: {} })).outcome, 'accepted');
    assert.equal(await inbox.runDue(), 1);
    assert.equal(seen.length, 3, 'the handler ran on each path');
    assert.deepEqual(seen, [undefined, undefined, undefined]);
  });

  it('receives a streamed body when it has been read whole: receivedAt after its last byte', async () => {
    let receivedAt: Date | undefined;
    const receiver = createReceiver({
      provider: plain(),
      store: memoryStore(),
      handler: ({ delivery }) => {
        receivedAt = delivery.receivedAt;
      },
    });
    const started = Date.now();
    const stream = Readable.from(
      (async function* () {
        yield Buffer.from('{"id":');
        await new Promise((resolve) => setTimeout(resolve, 300));
        yield Buffer.from('"slow"}');
      })(),
    );
    const result = await receiver.receive({ rawBody: stream, headers: {} });
    assert.equal(result.outcome, 'processed');
    assert.ok(receivedAt, 'the handler ran');
    assert.ok(receivedAt.getTime() - started >= 250, `received ${receivedAt.getTime() - started} ms in`);
  });

  it("takes whatever verify returns as the verification, even an event with an 'outcome' field", async () => {
    let ran = 0;
    const receiver = createReceiver({
      provider: plain({
        verify: ({ rawBody }) => {
          const event = JSON.parse(Buffer.from(rawBody).toString('utf8')) as { id: string };
          // A custom provider's Verified with extra fields, one named as a result's.
          return { event, id: event.id, dedup: 'id', outcome: 'rejected', status: 400 } as never;
        },
      }),
      store: memoryStore(),
      handler: () => {
        ran++;
      },
    });
    const result = await receiver.receive({ rawBody: body('d'), headers: {} });
    assert.equal(result.outcome, 'processed');
    assert.equal(ran, 1);
  });

  it('takes a thenable whose then throws as the refusal it throws, as await did', async () => {
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: the hostile thenable under test.
      then() {
        throw new VerificationError('invalid_signature', 'onceonly: not signed');
      },
    };
    const receiver = createReceiver({
      provider: plain({ verify: () => thenable as never }),
      store: memoryStore(),
      handler: () => {},
    });
    const result = await receiver.receive({ rawBody: body('e'), headers: {} });
    assert.equal(result.outcome, 'rejected');
    assert.equal(result.status, 401);
    assert.equal(result.code, 'invalid_signature');
  });
});
