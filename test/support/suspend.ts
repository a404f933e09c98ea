/**
 * A host suspend, as this process sees one: while `during` runs (in real time, so a store on
 * another host lets keys expire), `performance.now()` stands still, as CLOCK_MONOTONIC does while
 * a Linux host sleeps, and `Date.now()` goes on. Afterwards the monotonic clock carries on from
 * where it stopped. Returns how far each clock moved across the suspend, so a test can first check
 * that the suspend happened.
 */
export async function whileSuspended(
  during: () => Promise<void>,
): Promise<{ monoMs: number; wallMs: number }> {
  const real = performance.now.bind(performance);
  const stoppedAt = real();
  const wallBefore = Date.now();
  let lag = 0;
  let frozen = true;
  performance.now = () => (frozen ? stoppedAt : real() - lag);
  try {
    await during();
  } finally {
    lag = real() - stoppedAt;
    frozen = false;
  }
  const monoMs = performance.now() - stoppedAt;
  const wallMs = Date.now() - wallBefore;
  return { monoMs, wallMs };
}

/** Gives `performance.now` back (call once the test is over: readings after the suspend stay behind the real clock until then). */
export function resumeClock(): void {
  delete (performance as { now?: unknown }).now;
}
