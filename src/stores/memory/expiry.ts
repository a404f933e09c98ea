/**
 * A binary min-heap of (time, key): when each entry may be forgotten. Items are never updated in
 * place; a rewrite pushes a new one and the stale one is skipped when it comes up.
 */
export class ExpiryQueue {
  private times: number[] = [];
  private keys: string[] = [];

  get size(): number {
    return this.times.length;
  }

  clear(): void {
    this.times = [];
    this.keys = [];
  }

  peekTime(): number | undefined {
    return this.times[0];
  }

  push(time: number, key: string): void {
    const { times, keys } = this;
    let i = times.length;
    times.push(time);
    keys.push(key);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent]! <= time) break;
      times[i] = times[parent]!;
      keys[i] = keys[parent]!;
      i = parent;
    }
    times[i] = time;
    keys[i] = key;
  }

  /** Removes the soonest item and returns its key (the caller read its time with peekTime). */
  pop(): string {
    const { times, keys } = this;
    const top = keys[0]!;
    const time = times.pop()!;
    const key = keys.pop()!;
    const n = times.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && times[child + 1]! < times[child]!) child++;
        if (times[child]! >= time) break;
        times[i] = times[child]!;
        keys[i] = keys[child]!;
        i = child;
      }
      times[i] = time;
      keys[i] = key;
    }
    return top;
  }
}
