-- Writes one heartbeat at Redis time and registers the node; tidies the registry.
-- KEYS[1] the node's heartbeat hash, KEYS[2] the nodes set
-- ARGV: how to publish the beat ('PUBLISH', 'SPUBLISH' on a cluster, '' not at all), the beat
-- channel, the node name, this worker process's id, '1' once the name is its own ('0' to
-- claim it), the id of a process known dead that may be replaced at once, how long (ms)
-- another process's last beat keeps the name its own, this process's last beat (Redis ms,
-- 0 before the first), '1' to tidy the registry this beat, then field/value pairs.
-- Answers Redis time in ms, or, when another process has the name, {its id, host, pid,
-- ms since its beat}: a name claimed is kept while its process beats (a lease's
-- silence ends any job it ran: its own lease, `lease_ms`, when longer than `keeps` says); a name taken by another since is lost. Another
-- process's beat older than this one's last was not written since: an older snapshot
-- brought it back (a restore, a replica promoted), and this beat replaces it.
-- A heartbeat lives a day past its last beat, so servers gone for long leave no trace;
-- every so many beats check a few registered names and remove those whose heartbeat is gone
-- or silent for as long (older heartbeats were written without expiry). The heartbeats
-- share the job's hash tag, so they are in this script's slot.
local GONE_MS = 86400000
local CHECKS_PER_BEAT = 5

local publish, channel, node = ARGV[1], ARGV[2], ARGV[3]
local instance, claimed, dead, keeps = ARGV[4], ARGV[5] == '1', ARGV[6], tonumber(ARGV[7])
local own_last = tonumber(ARGV[8]) or 0
local tidy = ARGV[9] == '1'
local now = now_ms()
local other = redis.call('HMGET', KEYS[1], BEAT.INSTANCE, BEAT.BEAT_MS, BEAT.HOST, BEAT.PID, BEAT.LEASE_MS)
if other[1] and other[1] ~= '' and other[1] ~= instance then
  local at = tonumber(other[2]) or 0
  local age = now - at
  local kept = math.max(keeps, (tonumber(other[5]) or 0) + 1000)
  if (claimed and at >= own_last) or (not claimed and other[1] ~= dead and age < kept) then
    return {other[1], other[3] or '', other[4] or '', age}
  end
end
redis.call('HSET', KEYS[1], BEAT.BEAT_MS, now, BEAT.INSTANCE, instance, unpack(ARGV, 10))
redis.call('PEXPIRE', KEYS[1], GONE_MS)
redis.call('SADD', KEYS[2], node)
-- The beat watchers listen for instead of asking Redis each second. A user
-- not granted the channel still writes its heartbeat: watchers then ask.
if publish == 'PUBLISH' or publish == 'SPUBLISH' then
  redis.pcall(publish, channel, node)
end

if not tidy then
  return now
end
local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #node)
for _, name in ipairs(redis.call('SRANDMEMBER', KEYS[2], CHECKS_PER_BEAT)) do
  local key = prefix .. name
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then
    redis.call('SREM', KEYS[2], name)
  elseif kind == 'hash' and redis.call('PTTL', key) == -1 then
    local beat = tonumber(redis.call('HGET', key, BEAT.BEAT_MS))
    if beat and now - beat > GONE_MS then
      redis.call('DEL', key)
      redis.call('SREM', KEYS[2], name)
    end
  end
end
return now
