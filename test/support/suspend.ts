import os from 'node:os';
import { mock } from 'node:test';

/**
 * A host suspend, as this process sees one. While `during` runs (in real time, so a store on another
 * host lets keys expire meanwhile), neither clock moves: `performance.now()` and `Date.now()` stand
 * still, as if nothing in this process ran. Afterwards the wall clock is where real time is (Linux
 * steps CLOCK_REALTIME forward on resume) and the monotonic clock carries on from where it stopped
 * (CLOCK_MONOTONIC does not count a suspend). Returns how far each clock moved across it.
 */
export async function whileSuspended(
  during: () => Promise<void>,
): Promise<{ monoMs: number; wallMs: number }> {
  const realPerf = performance.now.bind(performance);
  const realDate = Date.now;
  const monoStopped = realPerf();
  const wallStopped = Date.now();
  performance.now = () => monoStopped;
  Date.now = () => wallStopped;
  try {
    await during();
  } finally {
    // (The clock in place before, itself maybe behind from an earlier suspend, less this one.)
    const lag = realPerf() - monoStopped;
    performance.now = () => realPerf() - lag;
    Date.now = realDate;
  }
  return { monoMs: performance.now() - monoStopped, wallMs: Date.now() - wallStopped };
}

/** Gives `performance.now` back (once the test is over: after a suspend it stays behind the real clock until then). */
export function resumeClock(): void {
  delete (performance as { now?: unknown }).now;
}

/**
 * The wall clock (`Date.now`) and the boot clock (`os.uptime`, CLOCK_BOOTTIME on Linux) set ahead
 * of real time by the amounts in `wallMs` and `bootMs` (changed at will), while the monotonic clock
 * is left alone: both by the same amount is a suspend just over, the wall clock alone a step (NTP,
 * a test's fake `Date`). `restore()` gives both back.
 */
export function shiftedClocks(): { wallMs: number; bootMs: number; restore(): void } {
  const realNow = Date.now.bind(Date);
  const realUptime = os.uptime.bind(os);
  const clocks = {
    wallMs: 0,
    bootMs: 0,
    restore: () => {
      wall.mock.restore();
      boot.mock.restore();
    },
  };
  const wall = mock.method(Date, 'now', () => realNow() + clocks.wallMs);
  const boot = mock.method(os, 'uptime', () => realUptime() + clocks.bootMs / 1_000);
  return clocks;
}
