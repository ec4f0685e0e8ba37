-- Redisson-compatible RLock operations, one per script call.
-- KEYS[1] lock hash, KEYS[2] fence counter, KEYS[3] the node's heartbeat hash, KEYS[4] the nodes set,
-- KEYS[5] the earliest time (Redis ms) a new holder may start the job,
-- KEYS[6] the run id of the Redis process that issued the last fence,
-- KEYS[7] the handover hash: the last holding (node, field, fence) and whether it stopped its job
-- ARGV[1] operation: acquire | renew | release | stopped (the holding under ARGV[2] stopped its job) |
--   started (it starts its job: while the lock is still its own) |
--   orphaned (its worker died and its job's whole tree is known gone: let go of the lock under ARGV[2])
-- ARGV[2] our field (<client-uuid>:<thread-id>), ARGV[3] lease in ms
-- ARGV[4] unlock channel, ARGV[5] node name, ARGV[6] the highest fence the caller has seen
-- ARGV[7] '1' on a Redis Cluster: the unlock message goes out sharded too (SPUBLISH), where Redisson 3.22+
-- listens; plain PUBLISH reaches Redisson before 3.22 (or with sharded mode off) on every node
-- ARGV[8] the worker process's id, written into the heartbeat an acquisition writes and the handover record ('' none)
-- acquire answers {1, fence, ms to wait before starting the job, why (0 none, 1 the counter was
-- missing, 2 Redis restarted less than a lease ago, 3 an earlier wait still runs), 1 if the lock
-- was already ours, the holding before (0 none or stopped, 1 unknown, 2 not known to have stopped),
-- its node, its fence, Redis time in ms, the fence counter it found (-1 missing), its worker process,
-- its lease in ms (0 not recorded)}
-- or {0, PTTL, fence counter (-1 missing), 1 if the handover record names a field of the lock
-- (a lockwatch holding), Redis time in ms} when someone else holds the lock
local lock, fence_key, node_key, nodes_key, start_key, run_key, handover_key =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local op, field, lease, channel, node = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local seen = tonumber(ARGV[6]) or 0

-- The next fence: above the counter, above every fence the caller has seen,
-- and above Redis time in ms. A counter lost with the data, or brought back
-- older by a restore, then still gives fences above every one issued before
-- (they were below the time they were issued at), and two primaries that
-- share a replicated counter give the same fence only in the same ms.
-- Notes which Redis process issued it. Returns the fence and the counter found.
local function next_fence(now, run)
  local current = tonumber(redis.call('GET', fence_key))
  local fence = math.max(seen, current or 0, now) + 1
  redis.call('SET', fence_key, string.format('%d', fence))
  if run then
    redis.call('SET', run_key, run)
  end
  return fence, current
end

-- This Redis process's run id, and the ms since it started (floored to the
-- second, so never more than the truth); nil when INFO is not granted.
local function server_run()
  local info = redis.pcall('INFO', 'server')
  if type(info) ~= 'string' then
    return nil, nil
  end
  local s = tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
  return string.match(info, 'run_id:(%x+)'), s and s * 1000
end

-- How long a new holder of a free lock must wait before it starts the job,
-- and why. An earlier holder runs its job until its next look finds the lock
-- gone, and at most until its lease runs out. It may have held the lock in
-- data Redis no longer has: a missing counter (Redis new, or lost its data)
-- waits a whole lease; a counter another Redis process issued (the process
-- restarted, maybe from an older snapshot) waits until a lease after this
-- process started, unless the counter is 0, seeded by whoever started this
-- new Redis; a wait an earlier new holder began and did not finish is finished.
local function start_wait(counter, issued_by, now, run, up)
  local lease_ms = tonumber(lease)
  local wait, why = 0, 0
  if counter == nil then
    wait, why = lease_ms, 1
  elseif counter ~= 0 and issued_by ~= run and up and up < lease_ms then
    wait, why = lease_ms - up, 2
  end
  local pending = (tonumber(redis.call('GET', start_key)) or 0) - now
  if pending > wait then
    wait, why = pending, 3
  end
  if wait > 0 then
    redis.call('SET', start_key, string.format('%d', now + wait), 'PX', wait)
  end
  return wait, why
end

-- The holding before a fresh one, which the new holder must know stopped
-- before it starts the job: 0 when there was none (a counter of 0 was
-- seeded on a new Redis) or it stopped its job, 1 when nothing says (no
-- record: evicted, or written by an older lockwatch), 2 when it is named
-- but not known to have stopped. A holding that never started its job
-- (it was still waiting) runs nothing: the one it waited for, kept as its
-- `prev`, is the one to wait for. Records the new holding in its place,
-- with that one as its `prev` while it has not started its job (`prev_fence`
-- `unknown` for one nothing named).
local UNKNOWN = 'unknown'
local function hand_over(counter, fence)
  local h = redis.call('HMGET', handover_key, HANDOVER.NODE, HANDOVER.FENCE, HANDOVER.STOPPED, HANDOVER.STARTED,
    HANDOVER.PREV_NODE, HANDOVER.PREV_FIELD, HANDOVER.PREV_FENCE, HANDOVER.FIELD, HANDOVER.INSTANCE,
    HANDOVER.PREV_INSTANCE, HANDOVER.LEASE_MS, HANDOVER.PREV_LEASE_MS)
  local state, wait_node, wait_field, wait_fence, wait_instance, wait_lease = 0, '', '', '', '', ''
  if h[2] then
    -- A record without `started` (an older lockwatch) counts as started.
    if h[4] ~= '0' then
      if h[3] ~= '1' then
        state, wait_node, wait_field, wait_fence, wait_instance, wait_lease = 2, h[1], h[8], h[2], h[9], h[11]
      end
    elseif h[7] == UNKNOWN then
      state = 1
    elseif h[7] and h[7] ~= '' then
      state, wait_node, wait_field, wait_fence, wait_instance, wait_lease = 2, h[5], h[6], h[7], h[10], h[12]
    end
  elseif counter ~= 0 then
    state = 1
  end
  -- An unknown holding before is passed on as such: should this holding
  -- lose the lock before it starts, the next must still wait for it.
  if state == 1 then
    wait_fence = UNKNOWN
  end
  redis.call('HSET', handover_key, HANDOVER.NODE, node, HANDOVER.FIELD, field, HANDOVER.FENCE, string.format('%d', fence),
    HANDOVER.INSTANCE, ARGV[8] or '', HANDOVER.STOPPED, '0', HANDOVER.STARTED, '0', HANDOVER.PREV_NODE, wait_node,
    HANDOVER.PREV_FIELD, wait_field or '', HANDOVER.PREV_FENCE, wait_fence, HANDOVER.PREV_INSTANCE, wait_instance or '',
    HANDOVER.LEASE_MS, lease, HANDOVER.PREV_LEASE_MS, wait_lease or '')
  return state, wait_node or '', tonumber(wait_fence) or 0, wait_instance or '', tonumber(wait_lease) or 0
end

-- Notes that the holding under our field starts its job: from now on it is
-- the one to wait for (the one before it is known gone, or its time is up).
local function note_started()
  if redis.call('HGET', handover_key, HANDOVER.FIELD) == field then
    redis.call('HSET', handover_key, HANDOVER.STARTED, '1', HANDOVER.PREV_NODE, '', HANDOVER.PREV_FIELD, '',
      HANDOVER.PREV_FENCE, '', HANDOVER.PREV_INSTANCE, '')
  end
end

-- Notes that the holding under our field stopped its job, if it is the last one.
local function note_stopped()
  if redis.call('HGET', handover_key, HANDOVER.FIELD) == field then
    redis.call('HSET', handover_key, HANDOVER.STOPPED, '1')
  elseif redis.call('HGET', handover_key, HANDOVER.PREV_FIELD) == field then
    redis.call('HSET', handover_key, HANDOVER.PREV_NODE, '', HANDOVER.PREV_FIELD, '', HANDOVER.PREV_FENCE, '',
      HANDOVER.PREV_INSTANCE, '')
  end
end

-- Whether the handover record names a field of the lock: the holder is (or
-- was, within the record's memory) a lockwatch holding, not a foreign one.
local function recorded_holder()
  local h = redis.call('HMGET', handover_key, HANDOVER.FIELD, HANDOVER.PREV_FIELD)
  for _, f in ipairs(h) do
    if f and f ~= '' and redis.call('HEXISTS', lock, f) == 1 then
      return 1
    end
  end
  return 0
end

if op == 'acquire' then
  local free = redis.call('EXISTS', lock) == 0
  if not free and redis.call('HEXISTS', lock, field) == 0 then
    -- Held by someone else: say how long it may still be held, the fence
    -- counter, whether the handover record names the holder, and when.
    return {0, redis.call('PTTL', lock), tonumber(redis.call('GET', fence_key)) or -1, recorded_holder(), now_ms()}
  end
  if free then
    redis.call('HINCRBY', lock, field, 1)
  end
  redis.call('PEXPIRE', lock, lease)
  local now = now_ms()
  local fence = (not free) and tonumber(redis.call('GET', fence_key))
  local wait, why = 0, 0
  local before, before_node, before_fence, before_instance, before_lease = 0, '', 0, '', 0
  local counter = -1
  if not fence then
    local run, up = server_run()
    local issued_by = redis.call('GET', run_key)
    local found
    fence, found = next_fence(now, run)
    counter = found or -1
    wait, why = start_wait(found, issued_by, now, run, up)
    before, before_node, before_fence, before_instance, before_lease = hand_over(found, fence)
  end
  -- The heartbeat names the new holding in the same step, so no reader sees
  -- a lock that no heartbeat claims; `starting` while the job waits.
  redis.call('HSET', node_key, BEAT.NODE, node, BEAT.LOCK_FIELD, field, BEAT.FENCE, fence,
    BEAT.STATE, wait > 0 and STATE.STARTING or STATE.RUNNING, BEAT.BEAT_MS, now, BEAT.STARTED_MS, now,
    BEAT.WAIT_UNTIL_MS, wait > 0 and string.format('%d', now + wait) or '')
  if ARGV[8] and ARGV[8] ~= '' then
    redis.call('HSET', node_key, BEAT.INSTANCE, ARGV[8])
  end
  redis.call('SADD', nodes_key, node)
  return {1, fence, wait, why, free and 0 or 1, before, before_node, before_fence, now, counter, before_instance,
    before_lease}
elseif op == 'renew' then
  if redis.call('HEXISTS', lock, field) == 1 then
    redis.call('PEXPIRE', lock, lease)
    -- When the lease was last extended: a new holder waits for this
    -- holder's job until the reaper's deadline counted from here.
    redis.call('HSET', node_key, BEAT.RENEWED_MS, now_ms())
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
  -- The worker stopped the job before it released.
  note_stopped()
  -- Redisson's waiters listen here for the unlock message 0.
  redis.call('PUBLISH', channel, 0)
  if ARGV[7] == '1' then
    redis.call('SPUBLISH', channel, 0)
  end
  return {1, 1}
elseif op == 'stopped' then
  note_stopped()
  return {1, 0}
elseif op == 'started' then
  -- Only while the lock is this holding's: a holding that lost it starts nothing.
  if redis.call('HEXISTS', lock, field) == 0 then
    return {0, 0}
  end
  note_started()
  return {1, 0}
elseif op == 'orphaned' then
  -- Only a holding's own field lets go, whatever its hold count: its worker
  -- is gone and its job's tree with it. Its heartbeat, while it names the
  -- holding, says idle and names no live process, so nobody waits for a job
  -- known to be gone and a worker started again may take the name at once.
  note_stopped()
  if redis.call('HGET', node_key, BEAT.LOCK_FIELD) == field then
    redis.call('HSET', node_key, BEAT.STATE, STATE.IDLE, BEAT.LOCK_FIELD, '', BEAT.CHILD_PID, '', BEAT.INSTANCE, '')
  end
  if redis.call('HEXISTS', lock, field) == 0 then
    return {0, 0}
  end
  redis.call('DEL', lock)
  redis.call('PUBLISH', channel, 0)
  if ARGV[7] == '1' then
    redis.call('SPUBLISH', channel, 0)
  end
  return {1, 1}
end
return redis.error_reply('unknown lock operation ' .. tostring(op))
