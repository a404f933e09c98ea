/**
 * The Lua scripts of the Redis inbox (see redis/inbox.ts for the layout). Every script runs over
 * the keys of one queue, which share one hash tag (`{space}`) and so one Cluster slot: KEYS[1] is
 * always the queue's anchor `<base>n` (its acceptance counter), and the scripts derive the other
 * names from it (`<base>e:<key>`, `<base>p:<receiver>`...), so a client-side key prefix (ioredis
 * `keyPrefix`) applies to them too. Names built inside a script are of the same slot by
 * construction; the ones a script knows in advance are passed as KEYS.
 *
 * An entry is two keys:
 * - `<base>e:<key>`, a hash of short fields (so Redis keeps it as a compact listpack):
 *   s: state: `p` pending, `r` processing (running), `c` completed, `d` dead; f: fingerprint;
 *   q: the receiver's key part (names its sets); o: its acceptance number (its member in the sets is
 *   `<o as 15 digits>|<key>`, so equal due times keep the acceptance order); n: attempts; t: the
 *   owner's token ('' when none); d: due (pending), lease end (processing), forgotten at
 *   (completed), died at (dead); a: accepted at; u: updated at; e: last error (n, t, d and u are
 *   left out until the first change after a plain accept: 0, none, a, a); and, JSON-encoded
 *   and only when there is one, ty type, id, it item, k the key as given (when it is not the
 *   stored one) and r the receiver (when it is not q);
 * - `<base>b:<key>`, a string: the delivery, JSON [headers, url, receivedAt], a newline, then the
 *   body's exact bytes. Deleted on completion when the body is to be dropped;
 * - `<base>s:<key>`, a hash: its durable steps, name → result, written by its owner only
 *   (INBOX_STEPS_SAVE), kept through retry, bury, requeue and takeovers, deleted on completion (so
 *   it never outlives the entry, which only expires or is purged once completed) and when an
 *   accept starts a new entry. Apart from the entry, which stays small.
 *
 * Each receiver has four sorted sets in the queue, scored by `d`: `p:` pending, `r:` processing,
 * `c:` completed, `x:` dead. All time is the server's (`TIME`, frozen while a script runs on
 * Redis 7).
 */

import { script } from './scripts.js';

const prelude = `
local base = string.sub(KEYS[1], 1, -2)
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function memberOf(seq, sk) return string.format('%015d', tonumber(seq)) .. '|' .. sk end
local STATES = {p = true, r = true, c = true, d = true}
`;

/** The entry a lease owns, else return 0. KEYS[2] is the entry, ARGV[1] the token. */
const owned = `
local held = redis.call('HMGET', KEYS[2], 's', 't', 'q', 'o')
if held[1] ~= 'r' or ARGV[1] == '' or held[2] ~= ARGV[1] then return 0 end
local q = held[3]
local member = memberOf(held[4], string.sub(KEYS[2], #base + 3))
`;

/**
 * KEYS: anchor, entry, delivery, steps, pending set, processing set. ARGV: receiver part, fingerprint,
 * delivery (JSON, newline, body), key part, claimMs ('' for none), token, the watch channel, then
 * field/value pairs of the optional fields.
 * Returns {0, due} accepted, {1, state} duplicate, {2, state} conflict. A pending entry (not
 * claimed) is published on the watch channel, the receiver part as the message (see watch.ts).
 */
export const INBOX_ACCEPT = `${prelude}
local held = redis.call('HMGET', KEYS[2], 's', 'f')
if held[1] then return {held[2] == ARGV[2] and 1 or 2, held[1]} end
local seq = redis.call('INCR', KEYS[1])
redis.call('DEL', KEYS[4])
-- A pending entry leaves out what it has not got yet: n (0), t (none), d and u (a).
local due, set = now, KEYS[5]
if ARGV[5] == '' then
  redis.call('HSET', KEYS[2], 's', 'p', 'f', ARGV[2], 'q', ARGV[1], 'o', seq, 'a', now, unpack(ARGV, 8))
  redis.pcall('PUBLISH', ARGV[7], ARGV[1])
else
  due, set = now + tonumber(ARGV[5]), KEYS[6]
  redis.call('HSET', KEYS[2], 's', 'r', 'f', ARGV[2], 'q', ARGV[1], 'o', seq, 'a', now, 'n', 1, 't', ARGV[6],
    'd', due, unpack(ARGV, 8))
end
redis.call('SET', KEYS[3], ARGV[3])
redis.call('ZADD', set, due, memberOf(seq, ARGV[4]))
return {0, due}
`;

/** The fields a view or a job is made of, after the key part: see `view()` in redis/inbox.ts. */
const viewFields = `'s', 'o', 'n', 'a', 'd', 'u', 'e', 'f', 'q', 'k', 'r', 'ty', 'id', 'it'`;

/**
 * KEYS: anchor, pending set, processing set, the receiver's foreign-spaces set. ARGV: limit,
 * leaseMs, then one token per entry to take.
 * Takes the due entries (pending with due passed, processing with a lease that ran out), oldest due
 * first (equal due: acceptance order), each under a new token with attempts + 1.
 * Returns {lease end, foreign spaces, {{key part, due, delivery, token, fields...}...}}.
 */
export const INBOX_TAKE = `${prelude}
local limit, expires = tonumber(ARGV[1]), now + tonumber(ARGV[2])
local pending = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local running = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local out, i, j = {}, 1, 1
while #out < limit do
  local set, state, member, score
  local pi, ri = pending[i], running[j]
  if pi and (not ri or tonumber(pending[i + 1]) < tonumber(running[j + 1])
      or (tonumber(pending[i + 1]) == tonumber(running[j + 1]) and pi < ri)) then
    set, state, member, score = KEYS[2], 'p', pi, pending[i + 1]
    i = i + 2
  elseif ri then
    set, state, member, score = KEYS[3], 'r', ri, running[j + 1]
    j = j + 2
  else
    break
  end
  local sk = string.sub(member, 17)
  local entry = base .. 'e:' .. sk
  local e = redis.call('HMGET', entry, ${viewFields})
  local seq, tries = tonumber(e[2]), tonumber(e[3] or 0)
  local sound = e[1] == state and seq and tries
  -- Damaged outside onceonly (a state, acceptance number or attempt count that is not one): taken
  -- all the same, its numbers rewritten, and handed out marked 'x' as unreadable, so the worker
  -- buries it and the rest of the take runs.
  local damaged = not sound and e[1] and (not STATES[e[1]] or e[1] == state)
  if not damaged and (not sound or memberOf(seq, sk) ~= member) then
    -- Not this set's entry (only if something else wrote under the prefix): drop the member.
    redis.call('ZREM', set, member)
  else
    local attempt, token = (tries or 0) + 1, ARGV[3 + #out]
    redis.call('HSET', entry, 's', 'r', 'n', attempt, 't', token, 'd', expires, 'u', now)
    if damaged then redis.call('HSET', entry, 'o', tonumber(string.sub(member, 1, 15))) end
    if state == 'p' then redis.call('ZREM', KEYS[2], member) end
    redis.call('ZADD', KEYS[3], expires, member)
    e[1], e[3], e[5], e[6] = 'r', attempt, expires, now
    out[#out + 1] = {sk, score, redis.call('GET', base .. 'b:' .. sk) or false, token,
      damaged and 'x' or state, unpack(e)}
  end
end
return {expires, redis.call('SMEMBERS', KEYS[4]), out}
`;

/**
 * KEYS: anchor, pending set, processing set, foreign-spaces set. ARGV: limit.
 * The first `limit` due entries without taking them: {foreign spaces, {member, due, ...}}.
 */
export const INBOX_PEEK = `${prelude}
local limit = tonumber(ARGV[1])
local out = {}
for _, set in ipairs({KEYS[2], KEYS[3]}) do
  local due = redis.call('ZRANGEBYSCORE', set, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  for k = 1, #due do out[#out + 1] = due[k] end
end
return {redis.call('SMEMBERS', KEYS[4]), out}
`;

/**
 * KEYS (every script of a lease's entry): anchor, entry, delivery, steps. ARGV: token, name, result.
 * Stores a step's result when the token owns the entry (its lease run out or not). 1 or 0.
 */
export const INBOX_STEPS_SAVE = `${prelude}${owned}
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
return 1
`;

/** KEYS: anchor, entry, delivery, steps. The steps as {name, result, ...}. */
export const INBOX_STEPS_LOAD = `return redis.call('HGETALL', KEYS[4])`;

/** KEYS: anchor, entry. ARGV: token, leaseMs. Returns 1 extended, 0 not ours. */
export const INBOX_EXTEND = `${prelude}${owned}
local due = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[2], 'd', due, 'u', now)
redis.call('ZADD', base .. 'r:' .. q, due, member)
return 1
`;

/**
 * KEYS: anchor, entry, delivery, steps. ARGV: token, retentionMs, dropBody ('1' or '').
 * Completed, forgotten by Redis itself after the retention (PEXPIRE); its steps go now. Also
 * forgets up to 16 members of the completed set whose retention ended, so the set stays small
 * without a purge.
 */
export const INBOX_COMPLETE = `${prelude}${owned}
local due = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[2], 's', 'c', 't', '', 'd', due, 'u', now)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[4])
if ARGV[3] == '1' then redis.call('DEL', KEYS[3]) else redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
redis.call('ZREM', base .. 'r:' .. q, member)
local done = base .. 'c:' .. q
local gone = redis.call('ZRANGEBYSCORE', done, '-inf', now, 'LIMIT', 0, 16)
if #gone > 0 then redis.call('ZREM', done, unpack(gone)) end
redis.call('ZADD', done, due, member)
return 1
`;

/**
 * KEYS: anchor, then entry, delivery, steps of each lease (one space's). ARGV: retentionMs, '1' to
 * drop the bodies, then each lease's token. Completes each entry its lease still owns, as
 * INBOX_COMPLETE does; returns 1 or 0 for each, in order.
 */
export const INBOX_COMPLETE_MANY = `${prelude}
local ttl = ARGV[1]
local due = now + tonumber(ttl)
local done, touched = {}, {}
for i = 1, (#KEYS - 1) / 3 do
  local entry, body = KEYS[3 * i - 1], KEYS[3 * i]
  local held = redis.call('HMGET', entry, 's', 't', 'q', 'o')
  done[i] = 0
  if held[1] == 'r' and ARGV[i + 2] ~= '' and held[2] == ARGV[i + 2] then
    local q = held[3]
    local member = memberOf(held[4], string.sub(entry, #base + 3))
    redis.call('HSET', entry, 's', 'c', 't', '', 'd', due, 'u', now)
    redis.call('PEXPIRE', entry, ttl)
    redis.call('DEL', KEYS[3 * i + 1])
    if ARGV[2] == '1' then redis.call('DEL', body) else redis.call('PEXPIRE', body, ttl) end
    redis.call('ZREM', base .. 'r:' .. q, member)
    redis.call('ZADD', base .. 'c:' .. q, due, member)
    touched[q] = true
    done[i] = 1
  end
end
for q in pairs(touched) do
  local gone = redis.call('ZRANGEBYSCORE', base .. 'c:' .. q, '-inf', now, 'LIMIT', 0, 16)
  if #gone > 0 then redis.call('ZREM', base .. 'c:' .. q, unpack(gone)) end
end
return done
`;

/**
 * KEYS: anchor, entry. ARGV: token, delayMs, error, watch channel. Back to pending, due after the
 * delay; published on the channel when due now.
 */
export const INBOX_RETRY = `${prelude}${owned}
local due = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[2], 's', 'p', 't', '', 'd', due, 'u', now, 'e', ARGV[3])
redis.call('ZREM', base .. 'r:' .. q, member)
redis.call('ZADD', base .. 'p:' .. q, due, member)
if due <= now then redis.pcall('PUBLISH', ARGV[4], q) end
return 1
`;

/** KEYS: anchor, entry. ARGV: token, error. Dead: kept, never taken, until requeued. */
export const INBOX_BURY = `${prelude}${owned}
redis.call('HSET', KEYS[2], 's', 'd', 't', '', 'd', now, 'u', now, 'e', ARGV[2])
redis.call('ZREM', base .. 'r:' .. q, member)
redis.call('ZADD', base .. 'x:' .. q, now, member)
return 1
`;

/**
 * KEYS: anchor, entry, delivery, steps. ARGV: watch channel. A dead entry that kept its body back to
 * pending, due now (published). 1 or 0.
 */
export const INBOX_REQUEUE_ONE = `${prelude}
local held = redis.call('HMGET', KEYS[2], 's', 'q', 'o', 'd')
local waiting = held[1] == 'p' and tonumber(held[4]) ~= nil and tonumber(held[4]) > now
if (held[1] ~= 'd' and not waiting) or redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
local member = memberOf(held[3], string.sub(KEYS[2], #base + 3))
redis.call('HSET', KEYS[2], 's', 'p', 'd', now, 'u', now)
if not waiting then redis.call('ZREM', base .. 'x:' .. held[2], member) end
redis.call('ZADD', base .. 'p:' .. held[2], now, member)
redis.pcall('PUBLISH', ARGV[1], held[2])
return 1
`;

/**
 * KEYS: anchor, dead set, pending set. ARGV: batch, skip, watch channel. Requeues the dead entries at
 * ranks skip .. skip + batch - 1 (published once when any). Returns {requeued, kept (dead without a
 * body), looked at}.
 */
export const INBOX_REQUEUE_DEAD = `${prelude}
local batch, skip = tonumber(ARGV[1]), tonumber(ARGV[2])
local members = redis.call('ZRANGE', KEYS[2], skip, skip + batch - 1)
local moved, kept = 0, 0
for _, member in ipairs(members) do
  local sk = string.sub(member, 17)
  local entry = base .. 'e:' .. sk
  local held = redis.call('HMGET', entry, 's', 'o')
  if held[1] ~= 'd' or not held[2] or memberOf(held[2], sk) ~= member then
    redis.call('ZREM', KEYS[2], member)
  elseif redis.call('EXISTS', base .. 'b:' .. sk) == 0 then
    kept = kept + 1
  else
    redis.call('HSET', entry, 's', 'p', 'd', now, 'u', now)
    redis.call('ZREM', KEYS[2], member)
    redis.call('ZADD', KEYS[3], now, member)
    moved = moved + 1
  end
end
if moved > 0 then redis.pcall('PUBLISH', ARGV[3], string.sub(KEYS[3], #base + 3)) end
return {moved, kept, #members}
`;

/**
 * KEYS: anchor, pending, processing, completed, dead sets.
 * Returns {pending, processing, completed, dead, age of the oldest due entry in ms, pending not yet due}.
 */
export const INBOX_STATS = `${prelude}
local oldest = now
for _, set in ipairs({KEYS[2], KEYS[3]}) do
  local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) < oldest then oldest = tonumber(first[2]) end
end
return {redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]),
  redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf'), redis.call('ZCARD', KEYS[5]), now - oldest,
  redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}
`;

/**
 * KEYS: anchor, dead, pending, processing, completed sets. ARGV: state letter ('' for all), limit,
 * offset. Entries in that order, each set by due, from the offset (whole sets passed over by
 * ZCOUNT, the rest by ZRANGEBYSCORE's LIMIT): {{key part, has body, fields...}...}.
 */
export const INBOX_LIST = `${prelude}
local limit, only, skip = tonumber(ARGV[2]), ARGV[1], tonumber(ARGV[3] or '0')
local out = {}
for k, state in ipairs({'d', 'p', 'r', 'c'}) do
  if #out >= limit then break end
  if only == '' or only == state then
    local min = state == 'c' and ('(' .. now) or '-inf'
    local here = 0
    if skip > 0 then here = redis.call('ZCOUNT', KEYS[k + 1], min, '+inf') end
    local members = {}
    if skip > 0 and here <= skip then
      skip = skip - here
    else
      members = redis.call('ZRANGEBYSCORE', KEYS[k + 1], min, '+inf', 'LIMIT', skip, limit - #out)
      skip = 0
    end
    for _, member in ipairs(members) do
      local sk = string.sub(member, 17)
      local e = redis.call('HMGET', base .. 'e:' .. sk, ${viewFields})
      if e[1] == state and e[2] and memberOf(e[2], sk) == member then
        out[#out + 1] = {sk, redis.call('EXISTS', base .. 'b:' .. sk), unpack(e)}
      end
    end
  end
end
return out
`;

/** KEYS: anchor, entry, delivery, steps. Returns nil, or {delivery or nil, fields...}. */
export const INBOX_GET = `
local e = redis.call('HMGET', KEYS[2], ${viewFields})
if not e[1] then return false end
return {redis.call('GET', KEYS[3]) or false, unpack(e)}
`;

/**
 * KEYS: anchor, completed set. ARGV: batch. Forgets up to `batch` completed entries past their
 * retention (their keys have mostly expired already): deletes what is left, and the members.
 * Returns how many.
 */
export const INBOX_PURGE = `${prelude}
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, member in ipairs(gone) do
  local sk = string.sub(member, 17)
  local entry = base .. 'e:' .. sk
  local held = redis.call('HMGET', entry, 's', 'o')
  if held[1] == 'c' and held[2] and memberOf(held[2], sk) == member then
    redis.call('DEL', entry, base .. 'b:' .. sk, base .. 's:' .. sk)
  end
end
if #gone > 0 then redis.call('ZREM', KEYS[2], unpack(gone)) end
return #gone
`;

/** Every inbox script with its SHA1, for EVALSHA. */
export const inboxScripts = {
  accept: script(INBOX_ACCEPT),
  take: script(INBOX_TAKE),
  peek: script(INBOX_PEEK),
  extend: script(INBOX_EXTEND),
  get: script(INBOX_GET),
  complete: script(INBOX_COMPLETE),
  completeMany: script(INBOX_COMPLETE_MANY),
  retry: script(INBOX_RETRY),
  bury: script(INBOX_BURY),
  requeueOne: script(INBOX_REQUEUE_ONE),
  requeueDead: script(INBOX_REQUEUE_DEAD),
  stats: script(INBOX_STATS),
  list: script(INBOX_LIST),
  purge: script(INBOX_PURGE),
  saveStep: script(INBOX_STEPS_SAVE),
  loadSteps: script(INBOX_STEPS_LOAD),
};
