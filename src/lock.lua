-- Redisson-compatible RLock operations, one per script call.
-- KEYS[1] lock hash, KEYS[2] fence counter, KEYS[3] the node's heartbeat hash, KEYS[4] the nodes set
-- ARGV[1] operation: acquire | renew | release
-- ARGV[2] our field (<client-uuid>:<thread-id>), ARGV[3] lease in ms
-- ARGV[4] unlock channel, ARGV[5] node name, ARGV[6] the highest fence the caller has seen
-- ARGV[7] '1' on a Redis Cluster: the unlock message goes out sharded (SPUBLISH), as Redisson 3.22+ sends it
-- acquire answers {1, fence, ms to wait before starting the job, 1 if the counter was missing,
-- 1 if the lock was already ours}
-- or {0, PTTL, fence} when someone else holds the lock
local lock, fence_key, node_key, nodes_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, field, lease, channel, node = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local seen = tonumber(ARGV[6]) or 0

local function redis_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- The next fence: above the counter and above every fence the caller has
-- seen. A counter lost with the data (a restart without persistence,
-- FLUSHALL) starts above Redis time in ms as well, so that no fence ever
-- repeats or goes back, even for a caller that remembers nothing. Returns
-- the fence and whether the counter was missing.
local function next_fence(now)
  local floor = seen
  local current = tonumber(redis.call('GET', fence_key))
  if current then
    floor = math.max(floor, current)
  else
    floor = math.max(floor, now)
  end
  local fence = floor + 1
  redis.call('SET', fence_key, string.format('%d', fence))
  return fence, current == nil
end

-- How long a new holder must wait before it starts the job. A missing
-- counter means Redis is new or lost its data, maybe under a holder that
-- still runs its job until its next renewal finds the lock gone (at most
-- 3/4 of a lease later): wait a whole lease. A counter restarted less than
-- a lease ago (it restarts at Redis time in ms, and grows by one per
-- acquisition) means a holder since that loss let go early: wait the rest.
local function start_wait(fence, missing, now)
  local lease_ms = tonumber(lease)
  if missing then
    return lease_ms
  end
  return math.max(0, math.min(lease_ms, fence + lease_ms - now))
end

if op == 'acquire' then
  local free = redis.call('EXISTS', lock) == 0
  if not free and redis.call('HEXISTS', lock, field) == 0 then
    -- Held by someone else: say how long it may still be held, and its fence.
    return {0, redis.call('PTTL', lock), tonumber(redis.call('GET', fence_key)) or 0}
  end
  if free then
    redis.call('HINCRBY', lock, field, 1)
  end
  redis.call('PEXPIRE', lock, lease)
  local now = redis_ms()
  local fence = (not free) and tonumber(redis.call('GET', fence_key))
  local missing = false
  if not fence then
    fence, missing = next_fence(now)
  end
  local wait = start_wait(fence, missing, now)
  -- The heartbeat names the new holding in the same step, so no reader sees
  -- a lock that no heartbeat claims; `starting` while the job waits.
  redis.call('HSET', node_key, 'node', node, 'lock_field', field, 'fence', fence,
    'state', wait > 0 and 'starting' or 'running', 'beat_ms', now, 'started_ms', now,
    'wait_until_ms', wait > 0 and string.format('%d', now + wait) or '')
  redis.call('SADD', nodes_key, node)
  return {1, fence, wait, missing and 1 or 0, free and 0 or 1}
elseif op == 'renew' then
  if redis.call('HEXISTS', lock, field) == 1 then
    redis.call('PEXPIRE', lock, lease)
    return {1, 0}
  end
  return {0, 0}
elseif op == 'release' then
  if redis.call('HEXISTS', lock, field) == 0 then
    return {0, 0}
  end
  if redis.call('HINCRBY', lock, field, -1) > 0 then
    redis.call('PEXPIRE', lock, lease)
    return {1, 0}
  end
  redis.call('DEL', lock)
  -- Redisson's waiters listen here for the unlock message 0.
  redis.call(ARGV[7] == '1' and 'SPUBLISH' or 'PUBLISH', channel, 0)
  return {1, 1}
end
return redis.error_reply('unknown lock operation ' .. tostring(op))
