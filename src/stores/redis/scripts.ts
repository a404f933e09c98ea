/**
 * The Lua scripts of the Redis store. Each touches exactly one key (KEYS[1]), so it runs on Redis
 * Cluster; all time is the server's (key expiry, PTTL, PEXPIRETIME, TIME).
 *
 * A claim key holds one string: `state|token|attempt|graceMs|ttlMs|fingerprint`
 * - state: `p` (processing) or `c` (completed);
 * - graceMs: how long the key outlives the lease, so that a takeover after the lease ran out still
 *   finds the attempt to raise. The key's TTL is leaseMs + graceMs, hence "the lease ran out"
 *   ⇔ PTTL <= graceMs, read on the server's clock. A completed key stores 0 and lives for retention;
 * - ttlMs: the TTL the key was last written with (leaseMs + graceMs, or the retention), so its
 *   absolute expiry minus ttlMs is the server time of that write: when the lease was claimed or
 *   last renewed, or when the key completed;
 * - fingerprint: empty when there is none, else `=` followed by it (so an empty fingerprint differs
 *   from none). It comes last because it may contain `|`.
 */

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
 * ARGV: token, leaseMs, graceMs, fingerprint field, leaseMs + graceMs.
 * Returns {1, attempt, expiresAt} acquired, {2, attempt, expiresAt, same} in-flight, {3, same} completed.
 */
export const CLAIM = `${expiry}
local key, token, grace, fp, px = KEYS[1], ARGV[1], ARGV[3], ARGV[4], ARGV[5]
-- The common case, a key nobody holds, is one SET NX: the rest only runs when the key exists.
if redis.call('SET', key, 'p|' .. token .. '|1|' .. grace .. '|' .. px .. '|' .. fp, 'NX', 'PX', px) then
  return {1, 1, expiry(key) - tonumber(grace)}
end
local value = redis.call('GET', key)
if not value then
  -- Only if the key expired between the two calls; scripts see frozen time on Redis 7, not on all servers.
  redis.call('SET', key, 'p|' .. token .. '|1|' .. grace .. '|' .. px .. '|' .. fp, 'PX', px)
  return {1, 1, expiry(key) - tonumber(grace)}
end
local state, _, attempt, held, stored = string.match(value, '^([pc])|([^|]*)|(%d+)|(%d+)|%d+|(.*)$')
if not state then return redis.error_reply('ONCEONLY_FOREIGN the key holds a value onceonly did not write') end
local same = (stored == '' or fp == '' or stored == fp) and 1 or 0
if state == 'c' then return {3, same} end
held = tonumber(held)
local pttl = redis.call('PTTL', key)
if pttl < 0 or pttl > held then return {2, tonumber(attempt), expiry(key) - held, same} end
-- The lease ran out (the key only lives on for its grace): take over, raising the attempt.
local nextAttempt = tonumber(attempt) + 1
redis.call('SET', key, 'p|' .. token .. '|' .. nextAttempt .. '|' .. grace .. '|' .. px .. '|' .. fp, 'PX', px)
return {1, nextAttempt, expiry(key) - tonumber(grace)}
`;

/**
 * ARGV: token, retentionMs, attempt, fingerprint field. Returns 1 confirmed, 0 another owner holds it.
 * Writes the key completed when it vanished (invariant 3): the work is done, a retry must see a
 * duplicate. A repeated confirm by the same owner finds its own token on the completed record.
 */
export const CONFIRM = `
local value = redis.call('GET', KEYS[1])
if value and string.match(value, '^[pc]|([^|]*)|') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'c|' .. ARGV[1] .. '|' .. ARGV[3] .. '|0|' .. ARGV[2] .. '|' .. ARGV[4], 'PX', ARGV[2])
return 1
`;

/** ARGV: token. Deletes a processing record we own; a completed key cannot be released. */
export const RELEASE = `
local value = redis.call('GET', KEYS[1])
if value and string.match(value, '^p|([^|]*)|') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

/** ARGV: token, graceMs, leaseMs + graceMs. Pushes the lease's end to now + leaseMs if we own it. */
export const EXTEND = `
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local token, attempt, fp = string.match(value, '^p|([^|]*)|(%d+)|%d+|%d+|(.*)$')
if token ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'p|' .. token .. '|' .. attempt .. '|' .. ARGV[2] .. '|' .. ARGV[3] .. '|' .. fp, 'PX', ARGV[3])
return 1
`;

/**
 * ARGV: token, retentionMs, fingerprint field. Returns 0 recorded (first), 1 duplicate.
 * A processing record whose lease ran out is taken over and completed, like a claim plus confirm.
 */
export const RECORD = `
local key = KEYS[1]
if redis.call('SET', key, 'c|' .. ARGV[1] .. '|1|0|' .. ARGV[2] .. '|' .. ARGV[3], 'NX', 'PX', ARGV[2]) then return 0 end
local value = redis.call('GET', key)
if not value then
  redis.call('SET', key, 'c|' .. ARGV[1] .. '|1|0|' .. ARGV[2] .. '|' .. ARGV[3], 'PX', ARGV[2])
  return 0
end
local state, attempt, held = string.match(value, '^([pc])|[^|]*|(%d+)|(%d+)|')
if state ~= 'p' then return 1 end
local pttl = redis.call('PTTL', key)
if pttl < 0 or pttl > tonumber(held) then return 1 end
redis.call('SET', key, 'c|' .. ARGV[1] .. '|' .. (tonumber(attempt) + 1) .. '|0|' .. ARGV[2] .. '|' .. ARGV[3], 'PX', ARGV[2])
return 0
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
