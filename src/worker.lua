-- Writes one heartbeat at Redis time and registers the node.
-- KEYS[1] the node's heartbeat hash, KEYS[2] the nodes set
-- ARGV: node name, then field/value pairs
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', KEYS[1], 'beat_ms', now, unpack(ARGV, 2))
redis.call('SADD', KEYS[2], ARGV[1])
return now
