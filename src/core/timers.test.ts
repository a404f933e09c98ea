import { strict as assert } from 'node:assert';
import { describe, it, mock } from 'node:test';
import { shiftedClocks } from '../../test/support/suspend.js';
import { memoryStore } from '../stores/memory.js';
import { StoreTimeoutError } from './errors.js';
import { callDeadlineMs, leaseNow, wheel, withDeadline } from './timers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the shared timer wheel', () => {
  it('fires each event once, after its time, and never a cancelled one', async () => {
    const fired: string[] = [];
    const started = performance.now();
    const times: Record<string, number> = {};
    const at = (name: string) => () => {
      fired.push(name);
      times[name] = performance.now() - started;
    };
    wheel.add(30, at('a'), true);
    const b = wheel.add(30, at('b'), true);
    wheel.add(60, at('c'), true);
    wheel.cancel(b);
    wheel.cancel(b); // twice is harmless
    await sleep(150);
    assert.deepEqual(fired, ['a', 'c']);
    assert.ok(times.a! >= 29 && times.c! >= 59, `fired at ${JSON.stringify(times)}`);
  });

  it('does not fire an event that an earlier one of the same tick cancelled, and fires one it added later', async () => {
    const fired: string[] = [];
    let second: ReturnType<typeof wheel.add> | undefined;
    wheel.add(
      20,
      () => {
        fired.push('first');
        wheel.cancel(second!);
        wheel.add(0, () => fired.push('added'), true);
      },
      true,
    );
    second = wheel.add(20, () => fired.push('second'), true);
    await sleep(120);
    assert.deepEqual(fired, ['first', 'added']);
  });

  it('keeps firing the others when one throws', async () => {
    const fired: string[] = [];
    wheel.add(
      10,
      () => {
        throw new Error('its own failure');
      },
      true,
    );
    wheel.add(10, () => fired.push('other'), true);
    await sleep(100);
    assert.deepEqual(fired, ['other']);
  });

  it('survives many adds and cancels in any order (a list, not a set)', async () => {
    const fired = new Set<number>();
    const ticks = Array.from({ length: 1_000 }, (_, i) => wheel.add(20, () => fired.add(i), true));
    // Cancel the odd ones, from the end, the middle and the front.
    for (let i = 999; i >= 0; i -= 2) wheel.cancel(ticks[i]!);
    await sleep(120);
    assert.equal(fired.size, 500);
    assert.ok([...fired].every((i) => i % 2 === 0));
  });
});

describe('store-call deadlines', () => {
  it('withDeadline rejects a call that never answers with StoreTimeoutError, and Infinity sets none', async () => {
    const never = () => new Promise<never>(() => {});
    await assert.rejects(withDeadline('claim', 30, never), StoreTimeoutError);
    const answered = await withDeadline('claim', Number.POSITIVE_INFINITY, async () => 'ok');
    assert.equal(answered, 'ok');
    await assert.rejects(
      withDeadline('claim', Number.POSITIVE_INFINITY, () => {
        throw new Error('sync throw');
      }),
      /sync throw/,
    );
  });

  it('callDeadlineMs: none for the memory store as made, the deadline for a lease method swapped out', () => {
    const methods = ['claim', 'confirm', 'release', 'extend'] as const;
    const store = memoryStore();
    for (const method of methods)
      assert.equal(callDeadlineMs(store, method, 2_000), Number.POSITIVE_INFINITY);
    for (const method of methods) {
      const swapped = memoryStore();
      (swapped as unknown as Record<string, unknown>)[method] = () => new Promise(() => {});
      assert.equal(callDeadlineMs(swapped, method, 2_000), 2_000, method);
      // The others keep none.
      for (const other of methods.filter((m) => m !== method))
        assert.equal(callDeadlineMs(swapped, other, 2_000), Number.POSITIVE_INFINITY, other);
    }
    // A copy by spread has no mark (it is not enumerable): the deadline.
    assert.equal(callDeadlineMs({ ...store }, 'claim', 2_000), 2_000);
  });
});

describe('the lease clock (leaseNow)', () => {
  it('runs with the monotonic clock, adds a suspend (the wall and boot clocks pulled ahead), never goes back when the wall clock is set back, and counts a later suspend from there', async () => {
    // Ordinary running: both clocks move together, and the reading moves with the monotonic one.
    const a = leaseNow();
    const monoA = performance.now();
    await sleep(50);
    const moved = leaseNow() - a;
    const monoMoved = performance.now() - monoA;
    assert.ok(Math.abs(moved - monoMoved) < 5, `moved ${moved} ms, monotonic ${monoMoved} ms`);

    const before = leaseNow();
    const clocks = shiftedClocks();
    try {
      // A suspend: the wall clock is stepped 5 s on resume, the boot clock ran on, the monotonic
      // clock did not.
      clocks.wallMs = 5_000;
      clocks.bootMs = 5_000;
      const afterSuspend = leaseNow();
      assert.ok(afterSuspend - before >= 4_980, `a 5 s suspend counted as ${afterSuspend - before} ms`);

      // The wall clock set back by 1 min: the reading does not go back, and runs on as before.
      clocks.wallMs = -55_000;
      const back = leaseNow();
      assert.ok(back >= afterSuspend, 'never goes back');
      await sleep(30);
      const on = leaseNow() - back;
      assert.ok(on >= 25 && on < 500, `ran ${on} ms in 30 ms after the wall clock was set back`);

      // A suspend after that counts in full, from the clock as set back.
      const beforeSecond = leaseNow();
      clocks.wallMs += 3_000;
      clocks.bootMs += 3_000;
      assert.ok(leaseNow() - beforeSecond >= 2_980, 'a later suspend counts in full');

      // A suspend noticed in small steps, each below the noise floor, counts once they add up. The
      // boot clock counts tens of ms (/proc/uptime), so the first batch to cross the floor (up to
      // 30 ms) may read as noise once; from then on the boot clock's lead vouches for the rest. (The
      // two clocks' own jitter takes a few tenths of a ms more: 59.98 was seen on a loaded host.)
      const beforeSteps = leaseNow();
      for (let i = 0; i < 9; i++) {
        clocks.wallMs += 10;
        clocks.bootMs += 10;
        leaseNow();
      }
      const counted = leaseNow() - beforeSteps;
      assert.ok(counted >= 55, `small steps add up: ${counted} ms of 90`);

      // The wall clock stepped forward alone (NTP at boot, a test's fake Date): on Linux the boot
      // clock says no suspend happened, and nothing counts; elsewhere it counts (the safe side).
      const beforeStep = leaseNow();
      clocks.wallMs += 60_000;
      const stepped = leaseNow() - beforeStep;
      if (process.platform === 'linux') assert.ok(stepped < 50, `a wall clock step counted ${stepped} ms`);
      else assert.ok(stepped >= 59_980);
    } finally {
      clocks.restore();
    }
  });
});

describe('the wheel after fake timers', () => {
  it('fires again once a test that faked setInterval while the wheel started has put it back', async () => {
    await sleep(50); // the wheel stops at its first tick with nothing waiting
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      wheel.cancel(wheel.add(10, () => {}, false)); // its timer is made under the fake
    } finally {
      mock.timers.reset();
    }
    await sleep(150);
    let fired = false;
    wheel.add(
      20,
      () => {
        fired = true;
      },
      true,
    );
    await sleep(200);
    assert.equal(fired, true, 'fired on a real timer');
  });
});
