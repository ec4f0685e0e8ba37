-- Reads the whole state of one job at one Redis TIME.
-- KEYS[1] lock key ('' when it lives in another slot and is read apart)
-- KEYS[2] fence, KEYS[3] users set, KEYS[4] nodes set, KEYS[5] event stream (optional)
-- ARGV[1] prefix of the enable flags, ARGV[2] prefix of the heartbeats
-- Every read checks TYPE first, so a key of the wrong type is reported, not an error;
-- big values are capped so a stray huge key cannot stall the server or the desktop.
local HASH_LIMIT = 64
local SET_LIMIT = 1000
local STRING_LIMIT = 1024

local function key_type(key)
  return redis.call('TYPE', key)['ok']
end

local function read_hash(key)
  local t = key_type(key)
  if t ~= 'hash' then
    return {t}
  end
  local n = redis.call('HLEN', key)
  if n <= HASH_LIMIT then
    return {t, n, redis.call('HGETALL', key)}
  end
  return {t, n, redis.call('HSCAN', key, 0, 'COUNT', HASH_LIMIT)[2]}
end

local function read_set(key)
  local t = key_type(key)
  if t ~= 'set' then
    return {t, 0, {}}
  end
  local n = redis.call('SCARD', key)
  if n <= SET_LIMIT then
    return {t, n, redis.call('SMEMBERS', key)}
  end
  return {t, n, redis.call('SSCAN', key, 0, 'COUNT', SET_LIMIT)[2]}
end

local function read_each(members, prefix)
  local out = {}
  for i, name in ipairs(members) do
    out[i] = read_hash(prefix .. name)
  end
  return out
end

local function read_lock(key)
  if key == '' then
    return {}
  end
  local t = key_type(key)
  local ttl = redis.call('PTTL', key)
  if t == 'hash' then
    local h = read_hash(key)
    return {t, ttl, h[2], h[3]}
  elseif t == 'string' then
    return {t, ttl, redis.call('STRLEN', key), redis.call('GETRANGE', key, 0, STRING_LIMIT - 1)}
  end
  return {t, ttl}
end

local function read_fence(key)
  local t = key_type(key)
  if t == 'string' then
    return {t, redis.call('GETRANGE', key, 0, 63)}
  end
  return {t}
end

-- The newest entries' ids and types, to notice Redis forgetting the job (the
-- stream vanishing or going back) and to date a first look. Tagged, so the
-- decoder finds it wherever it ends up in a reply that grows.
local EVENT_TAIL = 8
local function read_tail(key)
  if key == nil then
    return {'events', 'unread', {}}
  end
  local t = key_type(key)
  if t ~= 'stream' then
    return {'events', t, {}}
  end
  local out = {}
  for _, entry in ipairs(redis.call('XREVRANGE', key, '+', '-', 'COUNT', EVENT_TAIL)) do
    local kind, fields = '', entry[2]
    for i = 1, #fields - 1, 2 do
      if fields[i] == 'type' then
        kind = fields[i + 1]
        break
      end
    end
    out[#out + 1] = entry[1]
    out[#out + 1] = kind
  end
  return {'events', t, out}
end

local users = read_set(KEYS[3])
local nodes = read_set(KEYS[4])
return {
  redis.call('TIME'),
  read_lock(KEYS[1]),
  read_fence(KEYS[2]),
  users,
  read_each(users[3], ARGV[1]),
  nodes,
  read_each(nodes[3], ARGV[2]),
  read_tail(KEYS[5]),
}
