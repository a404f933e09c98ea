/**
 * The demo primary's port hand-out (src/cli/wait.ts assignPort): a worker killed right after it
 * said ready (the fault suites kill workers at any time) must not make the primary throw. A CI run
 * failed so: `write EPIPE` out of the send to a worker whose channel had just closed.
 */
import { strict as assert } from 'node:assert';
import { EventEmitter } from 'node:events';
import { it } from 'node:test';
import { assignPort } from '../../src/cli/wait.js';

it('a worker whose channel closed after it said ready is skipped, and the live ones get the port', async () => {
  const cluster = new EventEmitter();
  const got: unknown[] = [];
  const live = { send: (m: unknown) => void got.push(m), isDead: () => false };
  const closed = {
    send: () => {
      throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    },
    isDead: () => false,
  };
  const assigned = assignPort(cluster as unknown as Parameters<typeof assignPort>[0], 1);
  cluster.emit('message', live, { onceonlyReady: true });
  const deadline = Date.now() + 5_000;
  while (assigned.port === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.ok(assigned.port !== undefined, 'a port was picked');
  assert.deepEqual(got, [{ onceonlyListen: assigned.port }]);
  // Act: a restarted worker that died before the answer reached it.
  assert.doesNotThrow(() => cluster.emit('message', closed, { onceonlyReady: true }));
  assigned.detach();
});
