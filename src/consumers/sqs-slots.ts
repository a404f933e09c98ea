/**
 * The long-poll consumer's pacing (./sqs-poll.ts): the slots its receives take and its messages
 * release, and the pause after a receive error, both ended by stop().
 */

/** A wait that stop() cuts short (it aborts every controller in `aborts`). */
export async function pause(ms: number, aborts: Set<AbortController>): Promise<void> {
  const abort = new AbortController();
  aborts.add(abort);
  try {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      abort.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } finally {
    aborts.delete(abort);
  }
}

/**
 * The free slots: taken before a receive, released per message settled. A receive waits for a full
 * batch's worth (`most`, or every slot when there are fewer): a receive per slot freed would cost a
 * round trip per message.
 */
export function slots(size: number) {
  let free = size;
  let closed = false;
  let waiters: Array<() => void> = [];
  return {
    async take(most: number): Promise<number> {
      while (free < Math.min(most, size) && !closed)
        await new Promise<void>((resolve) => waiters.push(resolve));
      const n = Math.min(most, free);
      free -= n;
      return n;
    },
    release(n: number): undefined {
      free += n;
      if (n > 0 && waiters.length > 0) {
        const woken = waiters;
        waiters = [];
        for (const wake of woken) wake();
      }
      return undefined;
    },
    close() {
      closed = true;
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    },
  };
}
