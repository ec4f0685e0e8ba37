-- Cuts a supervisor's flag or "on it" hash back to the fields lockwatch writes
-- there, each at most FIELD_LIMIT bytes (a longer one emptied), and drops whatever else was written into
-- it (no ACL rule limits what her own key may hold); its expiry stays.
-- KEYS[1] the hash; ARGV the fields to keep.
-- Returns the bytes the hash took before, or 0 when it is not a hash.
local FIELD_LIMIT = 1024

local key = KEYS[1]
if redis.call('TYPE', key)['ok'] ~= 'hash' then
  return 0
end
-- Sampled: counting every field of a hash with millions would hold Redis up.
local before = redis.call('MEMORY', 'USAGE', key)
local keep = {}
-- A field too long is kept empty: unreadable, never taken for absent (an
-- `on` dropped would read as a flag without `on`, one emptied says why).
for _, field in ipairs(ARGV) do
  if redis.call('HEXISTS', key, field) == 1 then
    keep[#keep + 1] = field
    if redis.call('HSTRLEN', key, field) <= FIELD_LIMIT then
      keep[#keep + 1] = redis.call('HGET', key, field)
    else
      keep[#keep + 1] = ''
    end
  end
end
local ttl = redis.call('PTTL', key)
redis.call('UNLINK', key)
if #keep > 0 then
  redis.call('HSET', key, unpack(keep))
  if ttl > 0 then
    redis.call('PEXPIRE', key, ttl)
  end
end
return before
