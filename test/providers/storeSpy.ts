import { memoryStore } from '../../src/index.js';

/** A memory store that counts every call made to it: a handshake must make none. */
export function countingStore(): { store: ReturnType<typeof memoryStore>; calls: () => number } {
  let calls = 0;
  const store = new Proxy(memoryStore(), {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls += 1;
        return value.apply(target, args);
      };
    },
  });
  return { store, calls: () => calls };
}
