-- Writes one heartbeat at Redis time and registers the node; tidies the registry.
-- KEYS[1] the node's heartbeat hash, KEYS[2] the nodes set
-- ARGV: how to publish the beat ('PUBLISH', 'SPUBLISH' on a cluster, '' not at all), the beat
-- channel, the node name, then field/value pairs
-- A heartbeat lives a day past its last beat, so servers gone for long leave no trace;
-- each beat checks a few registered names and removes those whose heartbeat is gone
-- or silent for as long (older heartbeats were written without expiry). The heartbeats
-- share the job's hash tag, so they are in this script's slot.
local GONE_MS = 86400000
local CHECKS_PER_BEAT = 5

local publish, channel, node = ARGV[1], ARGV[2], ARGV[3]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', KEYS[1], 'beat_ms', now, unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], GONE_MS)
redis.call('SADD', KEYS[2], node)
-- The beat watchers listen for instead of asking Redis each second. A user
-- not granted the channel still writes its heartbeat: watchers then ask.
if publish == 'PUBLISH' or publish == 'SPUBLISH' then
  redis.pcall(publish, channel, node)
end

local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #node)
for _, name in ipairs(redis.call('SRANDMEMBER', KEYS[2], CHECKS_PER_BEAT)) do
  local key = prefix .. name
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then
    redis.call('SREM', KEYS[2], name)
  elseif kind == 'hash' and redis.call('PTTL', key) == -1 then
    local beat = tonumber(redis.call('HGET', key, 'beat_ms'))
    if beat and now - beat > GONE_MS then
      redis.call('DEL', key)
      redis.call('SREM', KEYS[2], name)
    end
  end
end
return now
