/**
 * Values that may answer now or later: SQLite's driver answers synchronously, the networked ones
 * with promises, and the SQL core chains its steps so that a synchronous driver's work is all done
 * before a method returns.
 */

/** A value, or a promise of it: SQLite's driver answers synchronously, the networked ones do not. */
export type Awaitable<T> = T | PromiseLike<T>;

/** Whether a step answers later (a promise or another thenable). */
export function isLater<T>(value: Awaitable<T>): value is PromiseLike<T> {
  return typeof (value as PromiseLike<T> | null)?.then === 'function';
}

/** `fn(value)`, at once when the value is there, else when it comes. */
export function then<T, U>(value: Awaitable<T>, fn: (v: T) => Awaitable<U>): Awaitable<U> {
  return isLater(value) ? Promise.resolve(value).then(fn) : fn(value as T);
}

/** `fn()`, its throw and its rejection both handed to `fail`. */
export function guarded<T>(fn: () => Awaitable<T>, fail: (err: unknown) => Awaitable<T>): Awaitable<T> {
  let value: Awaitable<T>;
  try {
    value = fn();
  } catch (err) {
    return fail(err);
  }
  return isLater(value) ? Promise.resolve(value).then(undefined, fail) : value;
}
