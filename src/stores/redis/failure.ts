/**
 * A failed Redis command as the store's error: a value onceonly did not write, a refused login or
 * ACL, a server without scripting (misconfigurations no retry fixes), or a passing server error or
 * an unreachable server (unavailable, 503).
 */
import { StoreMisconfiguredError, StoreUnavailableError } from '../../errors.js';
import { serverError } from './wire.js';

/** The store's error for `what` (a store operation) failing with `err`, on keys under `prefix`. */
export function redisFailure(prefix: string, what: string, err: unknown): StoreUnavailableError {
  const message = err instanceof Error ? err.message : String(err);
  if (message.includes('ONCEONLY_FOREIGN')) {
    return new StoreMisconfiguredError(
      'store_foreign_value',
      `onceonly: the Redis key for ${what} holds a value onceonly did not write; give redisStore a prefix that nothing else writes under`,
      { cause: err },
    );
  }
  if (/^(WRONGPASS|NOAUTH)\b/.test(message)) {
    return new StoreMisconfiguredError(
      'store_auth_failed',
      `onceonly: Redis ${what} failed: the server refused the client's login (${message}); give the client the right username and password (redis://user:password@host, or ioredis's username and password options)`,
      { cause: err },
    );
  }
  // An ACL refusal: NOPERM for a command or a key, or (Redis 7.0) a command refused inside a script.
  if (/^NOPERM\b/.test(message) || /can't run this command or subcommand/.test(message)) {
    return new StoreMisconfiguredError(
      'store_permission_denied',
      `onceonly: Redis ${what} failed: the client's ACL user may not run a command or touch a key the store needs (${message}); allow them: ACL SETUSER <user> ~${prefix}* +get +set +del +pttl +time +eval +evalsha (the key pattern after any client keyPrefix; +config|get too for the eviction-policy check; durable steps also need +hset +hgetall +pexpireat; the inbox also needs +hgetall +hset +hmget +exists +incr +zadd +zrem +zrange +zrangebyscore +zcard +zcount +pexpire +sadd +smembers)`,
      { cause: err },
    );
  }
  // A server or proxy without scripting (some managed offerings and proxies disable EVAL): no
  // retry will help.
  if (
    /^ERR unknown command '?(EVALSHA|EVAL)\b/i.test(message) ||
    /^ERR .*scripting.*disabled/i.test(message)
  ) {
    return new StoreMisconfiguredError(
      'store_permission_denied',
      `onceonly: Redis ${what} failed: the server does not run Lua scripts (${message}); the store needs EVAL and EVALSHA: use a Redis (or Valkey) that allows them, or a proxy that passes them through`,
      { cause: err },
    );
  }
  if (serverError(err)) {
    return new StoreUnavailableError(
      `onceonly: Redis ${what} failed: the server answered an error (${message}); it may pass: if it persists, check the server's health and log`,
      { cause: err },
    );
  }
  return new StoreUnavailableError(
    `onceonly: Redis ${what} failed: the server could not be reached (${message}); check that the server is running and reachable from this process, and that the client is connected`,
    { cause: err },
  );
}
