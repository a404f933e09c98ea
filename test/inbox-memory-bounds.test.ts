/**
 * The memory store's inbox is bounded like its claims: `maxEntries` entries and `maxInboxBytes` of
 * deliveries, past which an accept answers 503 `store_full` (the sender retries) instead of
 * growing the process without end; completing entries with `dropBody`, and retention running out,
 * free the room again.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { createReceiver, hmac, memoryStore } from '../src/index.js';

const SECRET = 'bounds-secret';
const provider = () =>
  hmac<{ id: string; type: string }>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-sig',
    id: (e) => e.id,
    type: (e) => e.type,
    retention: '1h',
  });

/** A signed delivery of about `kb` kB. */
function delivery(id: string, kb = 100): Request {
  const body = JSON.stringify({ id, type: 'file.uploaded', data: 'x'.repeat(kb * 1024) });
  return new Request('https://example.com/hooks', {
    method: 'POST',
    body,
    headers: { 'x-sig': createHmac('sha256', SECRET).update(body).digest('hex') },
  });
}

describe('memory store inbox bounds', () => {
  it('maxEntries 50: of 120 deliveries of 100 kB, 50 are accepted and the rest answered 503 store_full', async () => {
    // Prepare
    const store = memoryStore({ maxEntries: 50 });
    const receiver = createReceiver({
      provider: provider(),
      store,
      inbox: true,
      handler: () => {},
      logger: false,
    });
    // Act
    const answers: { status: number; outcome: string | null; code?: string }[] = [];
    for (let i = 0; i < 120; i++) {
      const res = await receiver.fetch(delivery(`evt_${i}`));
      const body = (await res.json().catch(() => ({}))) as { code?: string };
      answers.push({ status: res.status, outcome: res.headers.get('onceonly-outcome'), code: body.code });
    }
    // Assess: 50 accepted, 70 refused with a stable code the sender retries on; the store holds 50.
    assert.equal(answers.filter((a) => a.status === 202).length, 50);
    const refused = answers.filter((a) => a.status !== 202);
    assert.equal(refused.length, 70);
    assert.ok(
      refused.every((a) => a.status === 503 && a.code === 'store_full'),
      JSON.stringify(refused[0]),
    );
    assert.equal((await store.inbox!.stats()).pending, 50);
  });

  it('maxInboxBytes: deliveries past the byte bound are refused; completing them with dropBody frees the room', async () => {
    const store = memoryStore({ maxInboxBytes: 1024 * 1024 });
    const receiver = createReceiver({
      provider: provider(),
      store,
      inbox: { dropBody: true },
      handler: () => {},
      logger: false,
    });
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await receiver.fetch(delivery(`evt_${i}`))).status);
    // 100 kB each (plus headers): nine or ten fit in 1 MiB, never all fifteen.
    const accepted = statuses.filter((s) => s === 202).length;
    assert.ok(accepted >= 9 && accepted <= 10, `accepted ${accepted}`);
    assert.ok(statuses.slice(accepted).every((s) => s === 503));
    // Run them: completed with dropBody, their bytes are free again.
    assert.equal(await receiver.runDue(), accepted);
    assert.equal((await receiver.fetch(delivery('evt_after'))).status, 202);
  });

  it('completed entries count until their retention runs out, then make room again', async () => {
    let clock = Date.parse('2026-12-01T00:00:00Z');
    const store = memoryStore({ maxEntries: 5, now: () => clock });
    const receiver = createReceiver({
      provider: provider(),
      store,
      inbox: true,
      handler: () => {},
      logger: false,
    });
    for (let i = 0; i < 5; i++) assert.equal((await receiver.fetch(delivery(`evt_${i}`, 1))).status, 202);
    assert.equal(await receiver.runDue(), 5);
    // Completed, within the 1 h retention: still remembered (a retry must be a duplicate), no room.
    assert.equal((await receiver.fetch(delivery('evt_5', 1))).status, 503);
    assert.equal((await receiver.fetch(delivery('evt_0', 1))).headers.get('onceonly-outcome'), 'duplicate');
    // Past the retention: forgotten, room again.
    clock += 2 * 3_600_000;
    assert.equal((await receiver.fetch(delivery('evt_5', 1))).status, 202);
  });
});
