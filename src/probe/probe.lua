-- Reads the whole state of one job at one Redis TIME, or of several jobs in one call.
-- For one job:
-- KEYS[1] lock key ('' when it lives in another slot and is read apart)
-- KEYS[2] fence, KEYS[3] users set, KEYS[4] nodes set, KEYS[5] event stream (optional)
-- ARGV[1] prefix of the enable flags, ARGV[2] prefix of the heartbeats,
-- ARGV[3] prefix of the acknowledgements (optional), ARGV[4] prefix of the presence channels (optional)
-- ARGV[5] (optional) the fingerprint of the caller's last full read: when nothing it covers
-- has changed, only a glance is returned (what changes every second: time, lock, heartbeats,
-- presence), else the full read with its new fingerprint. '' asks for a full read with one.
-- For several (a process watching many jobs on one server): ARGV[1] is MANY, then for each
-- job its five keys in KEYS and its five arguments in ARGV, in the same order; the reply is
-- the list of the jobs' replies.
-- Every read checks the key's type first, so a key of the wrong type is reported, not an
-- error; big values are capped so a stray huge key cannot stall the server or the desktop.
-- Of a flag or heartbeat only the fields lockwatch uses are read; a registry is read
-- whole, or not at all when it has more than MEMBER_LIMIT names.
local MANY = 'lockwatch:many'
local HASH_LIMIT = 64
local MEMBER_LIMIT = 5000
local STRING_LIMIT = 1024
local FIELD_LIMIT = 1024
local SIZE_LIMIT = 16384

-- What is read of each kind of hash (the field lists come from lockwatch's
-- schema, put before this script). Flags are written by the supervisors
-- themselves (their ACL allows it), so each is measured before it is
-- fetched; heartbeats only workers may write.
local FLAG_READ = {measure = true, fields = FLAG_FIELDS}
local BEAT_READ = {measure = false, fields = BEAT_FIELDS}

-- Acknowledgements, like flags, are written by the supervisors: measured first.
local ACK_READ = {measure = true, fields = ACK_FIELDS}

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

-- {type, field count, {field, value, ...}} of the named fields present, or, for a
-- hash too big to be one of ours, {type, field count, {}, what is wrong with it}.
local function read_fields(key, how)
  -- HLEN doubles as the type check; any error but WRONGTYPE (NOPERM) ends the probe.
  local n = redis.pcall('HLEN', key)
  if type(n) == 'table' then
    if string.sub(n.err or '', 1, 9) ~= 'WRONGTYPE' then
      error(n)
    end
    return {key_type(key)}
  elseif n == 0 then
    return {'none'}
  elseif n > HASH_LIMIT then
    return {'hash', n, {}, 'has ' .. n .. ' fields'}
  end
  if how.measure then
    -- A supervisor may write anything into her own hash (no ACL limits a
    -- value's size): its whole size bounds what the fetch below returns, and
    -- only a hash too big is measured field by field, to say which.
    local size = redis.call('MEMORY', 'USAGE', key, 'SAMPLES', 0)
    if size > SIZE_LIMIT then
      for _, field in ipairs(how.fields) do
        local len = redis.call('HSTRLEN', key, field)
        if len > FIELD_LIMIT then
          return {'hash', n, {}, 'has a ' .. field .. ' of ' .. len .. ' bytes'}
        end
      end
      return {'hash', n, {}, 'takes ' .. size .. ' bytes'}
    end
  end
  local values = redis.call('HMGET', key, unpack(how.fields))
  local found = {}
  for i, field in ipairs(how.fields) do
    local value = values[i]
    if value and #value > FIELD_LIMIT then
      return {'hash', n, {}, 'has a ' .. field .. ' of ' .. #value .. ' bytes'}
    elseif value then
      found[#found + 1] = field
      found[#found + 1] = value
    end
  end
  return {'hash', n, found}
end

-- {type, member count, names}: every name, or none when there are more than
-- MEMBER_LIMIT (the caller says so rather than judge from a part).
local function read_set(key)
  local t = key_type(key)
  if t ~= 'set' then
    return {t, 0, {}}
  end
  local n = redis.call('SCARD', key)
  if n <= MEMBER_LIMIT then
    return {t, n, redis.call('SMEMBERS', key)}
  end
  return {t, n, {}}
end

local function read_each(members, prefix, how)
  local out = {}
  for i, name in ipairs(members) do
    out[i] = read_fields(prefix .. name, how)
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
      if fields[i] == ENTRY.TYPE then
        kind = fields[i + 1]
        break
      end
    end
    out[#out + 1] = entry[1]
    out[#out + 1] = kind
  end
  return {'events', t, out}
end

-- Each registered user's acknowledgement, tagged like the tail.
local function read_acks(members, prefix)
  if prefix == nil or prefix == '' then
    return {'acks', 'unread', {}}
  end
  local out = {}
  for i, name in ipairs(members) do
    out[i] = read_fields(prefix .. name, ACK_READ)
  end
  return {'acks', 'read', out}
end

-- The lock's holders (the fields of a hash lock), as a set.
local function holders_of(lock)
  local out = {}
  if lock[1] == 'hash' then
    local flat = lock[4] or {}
    for i = 1, #flat - 1, 2 do
      out[flat[i]] = true
    end
  end
  return out
end

-- Whether this node owns the slot of `key`. While a slot migrates, a probe whose
-- keys have already moved reaches the importing node by ASK, and the workers'
-- sharded subscriptions are still on the owner: counted there, they would look
-- gone. nil when it cannot be told (not a cluster, or a user not granted these).
local function owns_slot(key)
  local me = redis.pcall('CLUSTER', 'MYID')
  local slot = redis.pcall('CLUSTER', 'KEYSLOT', key)
  local ranges = redis.pcall('CLUSTER', 'SLOTS')
  if type(me) ~= 'string' or type(slot) ~= 'number' or ranges.err then
    return nil
  end
  for _, range in ipairs(ranges) do
    if range[1] <= slot and slot <= range[2] then
      return range[3][3] == me
    end
  end
  return false
end

-- A field's value in a heartbeat as read_fields returns it, or nil.
local function beat_field(beat, name)
  local found = beat[3] or {}
  for j = 1, #found - 1, 2 do
    if found[j] == name then
      return found[j + 1]
    end
  end
  return nil
end

-- This server process's run id; nil when it cannot be told (a user not granted INFO).
local function run_id()
  local info = redis.pcall('INFO', 'server')
  if type(info) ~= 'string' then
    return nil
  end
  return string.match(info, 'run_id:(%x+)')
end

-- For each node whose heartbeat says it holds a presence subscription, how
-- many subscribers its channel has (-1 for the others, -2 for a claim made in
-- another server process); tagged like the tail.
-- The heartbeat says which kind it holds: plain ('1'), counted by PUBSUB NUMSUB,
-- or sharded on the slot's owner of a Redis Cluster ('sharded'), counted by
-- PUBSUB SHARDNUMSUB (both allowed in EVAL_RO; neither needs a channel grant).
-- A holder's subscription found missing counts only in the server process it
-- was made in, which the heartbeat names (presence_on, a run id): subscriptions
-- are not replicated, so a replica promoted since has the claim without it.
-- A sharded one counts only where this node owns the slot too. Both are checked
-- then only, so a healthy look pays nothing for them; a count that cannot be
-- trusted is -1 or -2, and the heartbeat's grace applies.
-- Refused (a user provisioned before the count was granted) is no error:
-- the heartbeat's grace still applies.
local COUNTED_BY = {['1'] = 'NUMSUB', ['sharded'] = 'SHARDNUMSUB'}
local function read_presence(names, beats, prefix, holders)
  if prefix == nil or prefix == '' then
    return {'alive', 'unread', {}}
  end
  local asked = {NUMSUB = {channels = {}, at = {}}, SHARDNUMSUB = {channels = {}, at = {}}}
  for i, beat in ipairs(beats) do
    local how = COUNTED_BY[beat_field(beat, BEAT.PRESENCE) or '']
    if how then
      local q = asked[how]
      q.channels[#q.channels + 1] = prefix .. names[i]
      q.at[#q.channels] = i
    end
  end
  local counts = {}
  for i = 1, #beats do
    counts[i] = -1
  end
  -- The holder whose claimed subscription has no subscriber here, if any.
  local missing = nil
  for _, how in ipairs({'NUMSUB', 'SHARDNUMSUB'}) do
    local q = asked[how]
    if #q.channels > 0 then
      local reply = redis.pcall('PUBSUB', how, unpack(q.channels))
      if reply.err then
        return {'alive', 'refused', {}}
      end
      for k = 1, #q.channels do
        local i = q.at[k]
        counts[i] = reply[2 * k]
        local field = beat_field(beats[i], BEAT.LOCK_FIELD)
        if counts[i] == 0 and field and holders[field] then
          missing = {at = i, how = how, channel = q.channels[k]}
        end
      end
    end
  end
  if missing == nil then
    return {'alive', 'read', counts}
  end
  -- Claims made in another process are not counted (-2: the worker learns
  -- from it that its subscription is where nobody counts it), nor any when this
  -- user may not ask (-1); a claim naming none (a worker before presence_on) still is.
  if (beat_field(beats[missing.at], BEAT.PRESENCE_ON) or '') ~= '' then
    local here = run_id()
    for i = 1, #beats do
      local on = beat_field(beats[i], BEAT.PRESENCE_ON) or ''
      if on ~= '' and here == nil then
        counts[i] = -1
      elseif on ~= '' and on ~= here then
        counts[i] = -2
      end
    end
  end
  if counts[missing.at] == 0 and missing.how == 'SHARDNUMSUB' and owns_slot(missing.channel) ~= true then
    local sharded = asked.SHARDNUMSUB
    for k = 1, #sharded.channels do
      counts[sharded.at[k]] = -1
    end
  end
  return {'alive', 'read', counts}
end

-- What changes only by writes a full read must see: the fence, the stream's newest entry
-- (workers record every acquisition, release and flag flip there) and the registries' sizes.
-- Flags and acknowledgements themselves are not covered: their writers announce them on
-- the wake channel, and the watcher then asks for a full read.
local function fingerprint(K)
  local function part(reply)
    if type(reply) == 'table' and reply.err then
      return 'x'
    end
    return tostring(reply)
  end
  local fence = redis.pcall('GETRANGE', K[2], 0, 63)
  local top = redis.pcall('XREVRANGE', K[5], '+', '-', 'COUNT', 1)
  local top_id = 'x'
  if type(top) == 'table' and not top.err then
    top_id = (top[1] and top[1][1]) or ''
  end
  return table.concat({
    part(fence), top_id, part(redis.pcall('SCARD', K[3])), part(redis.pcall('SCARD', K[4])),
  }, '|')
end

-- One job's reply, its keys K and arguments A as KEYS and ARGV above, read at Redis
-- time `now` (one for all the jobs of a call: a script runs at one instant).
local function read_job(K, A, now)
  local known = A[5]
  local seen = nil
  if known ~= nil and K[5] ~= nil then
    seen = fingerprint(K)
    if seen == known then
      local names = redis.call('SMEMBERS', K[4])
      local beats = read_each(names, A[2], BEAT_READ)
      local lock = read_lock(K[1])
      return {'glance', seen, now, lock, names, beats,
              read_presence(names, beats, A[4], holders_of(lock))}
    end
  end

  local users = read_set(K[3])
  local nodes = read_set(K[4])
  local beats = read_each(nodes[3], A[2], BEAT_READ)
  local lock = read_lock(K[1])
  return {
    now,
    lock,
    read_fence(K[2]),
    users,
    read_each(users[3], A[1], FLAG_READ),
    nodes,
    beats,
    read_tail(K[5]),
    read_acks(users[3], A[3]),
    read_presence(nodes[3], beats, A[4], holders_of(lock)),
    {'fingerprint', seen or ''},
  }
end

local now = redis.call('TIME')
if ARGV[1] ~= MANY then
  return read_job(KEYS, ARGV, now)
end
local out = {}
for j = 1, #KEYS / 5 do
  out[j] = read_job({KEYS[5 * j - 4], KEYS[5 * j - 3], KEYS[5 * j - 2], KEYS[5 * j - 1], KEYS[5 * j]},
                    {ARGV[5 * j - 3], ARGV[5 * j - 2], ARGV[5 * j - 1], ARGV[5 * j], ARGV[5 * j + 1]}, now)
end
return out
