/**
 * The Lua scripts of the Redis store. Each touches one claim key (KEYS[1]) and, where it says so,
 * that key's steps hash (KEYS[2], of the same Cluster slot: see redis/slots.ts), so it runs on Redis
 * Cluster; all time is the server's (key expiry, PTTL, PEXPIRETIME, TIME).
 *
 * A claim key holds one string: `state|token|attempt|graceMs|ttlMs|fingerprint`
 * - state: `p` (processing) or `c` (completed);
 * - token: the owner's id (128 random bits in hex), followed by `.` and the lease's end in ms on the
 *   server's clock as the claimant estimated it (never later than the real end) when it claimed with
 *   the clock known; `extend` writes the id and the new end, read on the server (exact). Owner checks
 *   compare the id, which the caller sends (ARGV[1]). Empty once released (no real token is empty):
 *   a released record is takeable at once and keeps its attempt and fingerprint;
 * - graceMs: how long the key outlives the lease, so that a takeover after the lease ran out (or
 *   after a release) still finds the attempt to raise: the claim's retentionMs, or the store's
 *   leaseGrace. The key's TTL is leaseMs + graceMs, hence "the lease ran out" ⇔ PTTL <= graceMs,
 *   read on the server's clock; a release rewrites the key with TTL graceMs, so it ran out at once.
 *   A completed key stores 0 and lives for retention;
 * - ttlMs: the TTL the key was last written with (leaseMs + graceMs, or the retention), so its
 *   absolute expiry minus ttlMs is the server time of that write: when the lease was claimed or
 *   last renewed, or when the key completed;
 * - fingerprint: empty when there is none, else `=` followed by it (so an empty fingerprint differs
 *   from none). It comes last because it may contain `|`.
 *
 * A key's durable steps live in a hash beside it, name → result, written by the owner only
 * (STEPS_SAVE). The hash never outlives its claim key: every script that writes a processing
 * record with steps set the hash to expire with it (PEXPIREAT its exact expiry), and whatever starts
 * a new life of the key (a fresh claim or record) or completes it (confirm, record) deletes it. So a
 * key that is gone has no steps, and the fast claim (SET NX) of an absent key starts with none. A
 * confirm (or its native SET ... IFEQ), release or extend leaves the hash out only when no step can
 * be stored: the lease is the life's first and saved none (see redis/steps.ts).
 */
import { createHash } from 'node:crypto';

// The lease's end on the server's clock: the key's absolute expiry minus the grace. PEXPIRETIME
// (Redis 7, Valkey) is exact, so two reads of one untouched key agree to the millisecond; older
// servers fall back to TIME + PTTL.
const expiry = `
local function expiry(key)
  local at = redis.pcall('PEXPIRETIME', key)
  if type(at) == 'number' then return at end
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + redis.call('PTTL', key)
end
`;

/**
 * KEYS: claim key, steps. ARGV: token, leaseMs, graceMs, fingerprint field, leaseMs + graceMs.
 * Returns {1, attempt, expiresAt} acquired, {2, attempt, expiresAt, same} in-flight, {3, same} completed.
 * A fresh record starts with no steps; a takeover keeps them, expiring with the record.
 */
export const CLAIM = `${expiry}
local key, token, grace, fp, px = KEYS[1], ARGV[1], ARGV[3], ARGV[4], ARGV[5]
-- The common case, a key nobody holds, is one SET NX: the rest only runs when the key exists.
if redis.call('SET', key, 'p|' .. token .. '|1|' .. grace .. '|' .. px .. '|' .. fp, 'NX', 'PX', px) then
  redis.call('DEL', KEYS[2])
  return {1, 1, expiry(key) - tonumber(grace)}
end
local value = redis.call('GET', key)
if not value then
  -- Only if the key expired between the two calls; scripts see frozen time on Redis 7, not on all servers.
  redis.call('SET', key, 'p|' .. token .. '|1|' .. grace .. '|' .. px .. '|' .. fp, 'PX', px)
  redis.call('DEL', KEYS[2])
  return {1, 1, expiry(key) - tonumber(grace)}
end
local state, _, attempt, held, stored = string.match(value, '^([pc])|([^|]*)|(%d+)|(%d+)|%d+|(.*)$')
if not state then return redis.error_reply('ONCEONLY_FOREIGN the key holds a value onceonly did not write') end
local same = (stored == '' or fp == '' or stored == fp) and 1 or 0
if state == 'c' then return {3, same} end
held = tonumber(held)
local pttl = redis.call('PTTL', key)
-- A live lease; or a released or run-out record of another body, which keeps its fingerprint.
if pttl < 0 or pttl > held or same == 0 then return {2, tonumber(attempt), expiry(key) - held, same} end
-- Released, or the lease ran out (the key only lives on for its grace): take over, raising the attempt.
local nextAttempt = tonumber(attempt) + 1
redis.call('SET', key, 'p|' .. token .. '|' .. nextAttempt .. '|' .. grace .. '|' .. px .. '|' .. fp, 'PX', px)
local at = expiry(key)
-- pcall: a user whose ACL refuses PEXPIREAT cannot save steps either (STEPS_SAVE), so has none.
redis.pcall('PEXPIREAT', KEYS[2], at)
return {1, nextAttempt, at - tonumber(grace)}
`;

/**
 * ARGV: owner id, the completed value (`c|id|attempt|0|retentionMs|fingerprint field`, built by the
 * caller), retentionMs, and (when the caller kept it) the exact value this lease's claim wrote.
 * Returns 1 confirmed, 0 another owner holds it. Writes the key completed when it vanished
 * (invariant 3): the work is done, a retry must see a duplicate. A key still holding the claim's
 * value byte for byte is ours and untouched since (it carries the owner's random id): one string
 * comparison, the Lua twin of `SET ... IFEQ`, which is the common confirm, run once per processed
 * event. Anything else (renewed, taken over, released, confirmed already) is checked by the owner
 * id, in the same call: a confirm is one command, sent while the lease is live. A repeated confirm
 * by the same owner finds its own id on the completed record. The owner check compares bytes in
 * place (no pattern). The id is followed by the field separator, or by `.` and the lease end the
 * claim wrote. The caller never sends an empty id, nor one with `|` or `.`. KEYS[2], when given (the
 * lease may have steps), is the steps hash: deleted with the completion.
 */
export const CONFIRM = `
local value = redis.call('GET', KEYS[1])
if value and value ~= ARGV[4] then
  local state, id = string.byte(value, 1), ARGV[1]
  local after = string.byte(value, 3 + #id)
  if (state ~= 112 and state ~= 99) or string.byte(value, 2) ~= 124 or string.sub(value, 3, 2 + #id) ~= id or (after ~= 124 and after ~= 46) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if KEYS[2] then redis.call('DEL', KEYS[2]) end
return 1
`;

/**
 * KEYS: claim key, steps (when the key may have them). ARGV: owner id. Releases a processing record we own: no owner (empty
 * token), the lease ends now, and the key lives on for its grace with its attempt, fingerprint and
 * steps (which expire with it). A completed key cannot be released.
 */
export const RELEASE = `${expiry}
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local token, attempt, grace, fp = string.match(value, '^p|([^|]*)|(%d+)|(%d+)|%d+|(.*)$')
if not token or token == '' or string.match(token, '^[^.]*') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'p||' .. attempt .. '|' .. grace .. '|' .. grace .. '|' .. fp, 'PX', grace)
if KEYS[2] then redis.pcall('PEXPIREAT', KEYS[2], expiry(KEYS[1])) end
return 1
`;

/**
 * KEYS: claim key, steps (when the key may have them). ARGV: owner id, leaseMs. Moves the lease's end to now + leaseMs if we own it, keeping the grace
 * the claim stored. The token is written back as the id and the new end, read on this server's own
 * clock and set as the key's absolute expiry (PXAT, Redis 6.2+), so the end it carries is exact: the
 * end the claim carried no longer holds (the new one may even be earlier). The steps expire with it.
 */
export const EXTEND = `
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local token, attempt, grace, fp = string.match(value, '^p|([^|]*)|(%d+)|(%d+)|%d+|(.*)$')
if not token or token == '' or string.match(token, '^[^.]*') ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[2]) + tonumber(grace)
local now = redis.call('TIME')
local ends = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + tonumber(ARGV[2])
local at = string.format('%d', ends + tonumber(grace))
redis.call('SET', KEYS[1], 'p|' .. ARGV[1] .. '.' .. string.format('%d', ends) .. '|' .. attempt .. '|' .. grace .. '|' .. string.format('%d', ttl) .. '|' .. fp, 'PXAT', at)
if KEYS[2] then redis.pcall('PEXPIREAT', KEYS[2], at) end
return 1
`;

/**
 * KEYS: claim key, steps. ARGV: token, retentionMs, fingerprint field. Returns 0 recorded (first), 1
 * duplicate. A released record, or one whose lease ran out, is taken over and completed, like a
 * claim plus confirm (its steps go); unless it holds another fingerprint, which it keeps (a
 * duplicate then, as a live lease).
 */
export const RECORD = `
local key = KEYS[1]
if redis.call('SET', key, 'c|' .. ARGV[1] .. '|1|0|' .. ARGV[2] .. '|' .. ARGV[3], 'NX', 'PX', ARGV[2]) then
  redis.call('DEL', KEYS[2])
  return 0
end
local value = redis.call('GET', key)
if not value then
  redis.call('SET', key, 'c|' .. ARGV[1] .. '|1|0|' .. ARGV[2] .. '|' .. ARGV[3], 'PX', ARGV[2])
  redis.call('DEL', KEYS[2])
  return 0
end
local state, attempt, held, stored = string.match(value, '^([pc])|[^|]*|(%d+)|(%d+)|%d+|(.*)$')
if state ~= 'p' then return 1 end
local pttl = redis.call('PTTL', key)
if pttl < 0 or pttl > tonumber(held) then return 1 end
if stored ~= '' and ARGV[3] ~= '' and stored ~= ARGV[3] then return 1 end
redis.call('SET', key, 'c|' .. ARGV[1] .. '|' .. (tonumber(attempt) + 1) .. '|0|' .. ARGV[2] .. '|' .. ARGV[3], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
return 0
`;

/**
 * KEYS: claim key, steps. ARGV: owner id, step name, result. Stores the result when the owner holds
 * the key processing (its lease run out or not, as EXTEND), the hash expiring with the key. 1 or 0.
 */
export const STEPS_SAVE = `${expiry}
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local token = string.match(value, '^p|([^|]*)|')
if not token or token == '' or string.match(token, '^[^.]*') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIREAT', KEYS[2], expiry(KEYS[1]))
return 1
`;

/** KEYS: claim key, steps. The steps of a processing (or released) record: {name, result, ...}. */
export const STEPS_LOAD = `
local value = redis.call('GET', KEYS[1])
if not value or string.byte(value, 1) ~= 112 then return {} end
return redis.call('HGETALL', KEYS[2])
`;

/** ARGV: version (decimal string). Returns 1 when stored (newer than the stored one), else 0. */
export const ADVANCE = `
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`;

/** Returns nil, or {value, absolute expiry in ms}. */
export const INSPECT = `${expiry}
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, expiry(KEYS[1])}
`;

/** A script as the store sends it: its body (EVAL) and its SHA1 (EVALSHA). */
export interface Script {
  readonly body: string;
  readonly sha: string;
}

/** A script from its body, with its SHA1: for the claim scripts here and the inbox's alike. */
export function script(body: string): Script {
  return { body, sha: createHash('sha1').update(body).digest('hex') };
}
