-- Shared by every script (prepended to each when it is loaded): the SFQ of semantics §3 on the
-- store's keys, the estimator of §6, and the event log. Every number is kept as text written
-- with %.17g, which reads back as the same double; no float is ever returned as a Lua number
-- (Redis would truncate it to an integer).

local P = KEYS[1]
local RUN, METER, BACKLOG, REPLICAS, EVENTS = P .. 'run', P .. 'meter', P .. 'backlog', P .. 'replicas', P .. 'events'

local function fmt(x) return string.format('%.17g', x) end

local function jnum(x)
  if x == nil then return 'null' end
  return fmt(x)
end

local function jstr(s)
  if s == nil or s == false then return 'null' end
  return s  -- already JSON-encoded by the replica
end

local run = {}

-- The estimator's parameters, as join.lua keeps them in the run hash (est_ fields).
local EST = {'input_weight', 'output_weight', 'update', 'window', 'alpha', 'start_ratio', 'default_output_tokens'}

local function load_run()
  local r = redis.call('HMGET', RUN, 'id', 'seq', 't', 'v', 'max_meter', 'inflight', 'slots', 'ring', 'started',
    'est_input_weight', 'est_output_weight', 'est_update', 'est_window', 'est_alpha', 'est_start_ratio', 'est_default_output_tokens')
  if not r[1] then return false end
  run.id, run.seq, run.t, run.v, run.max_meter = r[1], tonumber(r[2]), tonumber(r[3]), tonumber(r[4]), tonumber(r[5])
  run.inflight, run.slots, run.ring, run.started = tonumber(r[6]), tonumber(r[7]), tonumber(r[8]), tonumber(r[9])
  run.est = {input_weight = tonumber(r[10]), output_weight = tonumber(r[11]), update = r[12], window = tonumber(r[13]),
    alpha = tonumber(r[14]), start_ratio = tonumber(r[15]), default_output_tokens = tonumber(r[16])}
  return true
end

local function save_run()
  redis.call('HSET', RUN, 'seq', string.format('%d', run.seq), 't', fmt(run.t), 'v', fmt(run.v),
    'max_meter', fmt(run.max_meter), 'inflight', string.format('%d', run.inflight))
end

local function store_now()
  local now = redis.call('TIME')
  return tonumber(now[1]) + tonumber(now[2]) / 1000000
end

-- Seconds since the run started, never going back; the store's clock is read once per script.
local clock = nil
local function event_time()
  if clock == nil then clock = store_now() end
  local t = clock - run.started
  if t > run.t then run.t = t end
  return run.t
end

-- One §7 event: seq from the run, into the stream (trimmed to about --ring entries). ``to`` is the
-- replica to tell (dispatches), ``rid`` the request it is about.
local function emit(kind, req, v, meter, extras, to)
  local seq = run.seq
  run.seq = seq + 1
  local t = event_time()
  local rid, user, weight, replica = 'null', 'null', '', ''
  if req then
    rid = '"' .. req.rid .. '"'
    user = req.uj
    weight = ',"weight":' .. req.w
    replica = ',"replica":' .. req.rep
  end
  local data = '{"seq":' .. string.format('%d', seq) .. ',"t":' .. fmt(t) .. ',"kind":"' .. kind ..
    '","scheduler":"sfq","request_id":' .. rid .. ',"user":' .. user .. ',"cost":' .. jnum(extras and extras.cost) ..
    ',"v":' .. jnum(v) .. ',"meter":' .. jnum(meter) .. ',"deficit":null' .. weight .. replica
  if extras then data = data .. (extras.json or '') end
  data = data .. '}'
  local id = string.format('%d', seq) .. '-1'
  if to then
    redis.call('XADD', EVENTS, 'MAXLEN', '~', run.ring, id, 'e', data, 't', fmt(t), 'to', to, 'r', req.rid, 'c', fmt(extras.cost), 'u', req.u)
  else
    redis.call('XADD', EVENTS, 'MAXLEN', '~', run.ring, id, 'e', data, 't', fmt(t))
  end
end

local function get_req(rid)
  local r = redis.call('HMGET', P .. 'req:' .. rid, 'u', 'uj', 'rep', 'n', 'cap', 'sk', 'st', 'w')
  if not r[1] then return nil end
  return {rid = rid, u = r[1], uj = r[2], rep = r[3], n = tonumber(r[4]), cap = tonumber(r[5]), sk = r[6], st = r[7], w = r[8]}
end

local function meter_of(user)
  local m = redis.call('HGET', METER, user)
  if m then return tonumber(m) end
  return nil
end

-- The estimator (semantics §6): the ratio of a scope key, and learning from a completion.
local function ratio_of(sk)
  local value = redis.call('HGET', P .. 'est:' .. sk, 'value')
  if value then return tonumber(value) end
  return run.est.start_ratio
end

local function price(req)
  local e = run.est
  if req.cap == nil then
    return e.input_weight * req.n + e.output_weight * e.default_output_tokens, nil, e.default_output_tokens
  end
  local ratio = ratio_of(req.sk)
  local est_output = req.cap * ratio
  return e.input_weight * req.n + e.output_weight * est_output, ratio, est_output
end

local function learn(sk, output, cap)
  local e, key = run.est, P .. 'est:' .. sk
  if e.update == 'ema' then
    local alpha = e.alpha
    e.value = (1.0 - alpha) * ratio_of(sk) + alpha * (output / cap)
    redis.call('HSET', key, 'value', fmt(e.value))
    return
  end
  local sums = redis.call('HMGET', key, 'out', 'cap')
  local out, caps = (tonumber(sums[1]) or 0) + output, (tonumber(sums[2]) or 0) + cap
  if e.update == 'window' then
    local pairs_key = P .. 'estw:' .. sk
    redis.call('RPUSH', pairs_key, output .. ' ' .. cap)
    if redis.call('LLEN', pairs_key) > e.window then
      local old = redis.call('LPOP', pairs_key)
      local space = string.find(old, ' ')
      out = out - tonumber(string.sub(old, 1, space - 1))
      caps = caps - tonumber(string.sub(old, space + 1))
    end
  end
  redis.call('HSET', key, 'out', string.format('%d', out), 'cap', string.format('%d', caps), 'value', fmt(out / caps))
end

local function idle_reset_if_idle()
  if redis.call('ZCARD', BACKLOG) == 0 then
    if run.max_meter > run.v then run.v = run.max_meter end
    emit('idle_reset', nil, run.v, nil, nil, nil)
  end
end

-- While a slot is free and someone waits: pick argmin (S_i, user) (the sorted set orders equal
-- scores by member bytes, which for UTF-8 is code point order), charge, tell the replica.
-- Returns the requests dispatched for replica ``mine`` (so its caller needs no notification).
local function dispatch_while_free(mine)
  local own = {}
  while run.inflight < run.slots do
    local top = redis.call('ZRANGE', BACKLOG, 0, 0, 'WITHSCORES')
    if #top == 0 then break end
    local user, meter = top[1], tonumber(top[2])
    local qkey = P .. 'q:' .. user
    local rid = redis.call('LPOP', qkey)
    local req = get_req(rid)
    run.v = meter
    local cost, ratio, est_output = price(req)
    local charged = meter + cost / tonumber(req.w)
    if redis.call('LLEN', qkey) == 0 then
      redis.call('ZREM', BACKLOG, user)
    else
      redis.call('ZADD', BACKLOG, fmt(charged), user)
    end
    redis.call('HSET', METER, user, fmt(charged))
    if charged > run.max_meter then run.max_meter = charged end
    run.inflight = run.inflight + 1
    redis.call('HSET', P .. 'req:' .. rid, 'st', 'r', 'cost', fmt(cost))
    redis.call('SREM', P .. 'rq:' .. req.rep, rid)
    redis.call('SADD', P .. 'rr:' .. req.rep, rid)
    redis.call('HINCRBY', P .. 'busy', user, 1)
    emit('dispatch', req, meter, charged, {cost = cost, json = ',"ratio":' .. jnum(ratio) .. ',"est_output":' .. jnum(est_output)}, req.rep)
    if req.rep == mine then
      own[#own + 1] = rid
      own[#own + 1] = fmt(cost)
    end
    idle_reset_if_idle()
  end
  return own
end

-- A queued request leaves the queue, uncharged (§3: the user leaves the backlog if it was its last).
local function cancel(req)
  local qkey = P .. 'q:' .. req.u
  redis.call('LREM', qkey, 1, req.rid)
  if redis.call('LLEN', qkey) == 0 then redis.call('ZREM', BACKLOG, req.u) end
  redis.call('SREM', P .. 'rq:' .. req.rep, req.rid)
  redis.call('DEL', P .. 'req:' .. req.rid)
  emit('cancel', req, run.v, meter_of(req.u), nil, nil)
  idle_reset_if_idle()
end

-- A dispatched request left its slot; ``output`` feeds the estimator (nil when unknown).
local function complete(req, output, outcome)
  run.inflight = run.inflight - 1
  if output and req.cap then learn(req.sk, output, req.cap) end
  redis.call('SREM', P .. 'rr:' .. req.rep, req.rid)
  redis.call('DEL', P .. 'req:' .. req.rid)
  redis.call('HINCRBY', P .. 'busy', req.u, -1)
  local json = ',"output_tokens":' .. jnum(output)
  if outcome then json = json .. ',"outcome":"' .. outcome .. '"' end
  emit('complete', req, run.v, meter_of(req.u), {json = json}, nil)
end

-- A replica whose lease ran out (or that left): its queued requests cancelled, its running ones
-- completed as lost; nothing refunded. Their slots go back to the pool (the caller dispatches).
local function settle_replica(rep)
  local queued = redis.call('SMEMBERS', P .. 'rq:' .. rep)
  table.sort(queued, function(a, b) return tonumber(string.match(a, '%d+$')) < tonumber(string.match(b, '%d+$')) end)
  for _, rid in ipairs(queued) do cancel(get_req(rid)) end
  local running = redis.call('SMEMBERS', P .. 'rr:' .. rep)
  table.sort(running, function(a, b) return tonumber(string.match(a, '%d+$')) < tonumber(string.match(b, '%d+$')) end)
  for _, rid in ipairs(running) do complete(get_req(rid), nil, 'lost') end
  local held = tonumber(redis.call('HGET', P .. 'rep:' .. rep, 'held') or '0')
  run.inflight = run.inflight - held
  redis.call('HSET', P .. 'rep:' .. rep, 'held', '0')
  redis.call('ZREM', REPLICAS, rep)
end

-- Settle every replica whose lease ended before now (a survivor does it, inside its own script).
local function reap(now, except)
  local dead = redis.call('ZRANGEBYSCORE', REPLICAS, '-inf', '(' .. fmt(now))
  for _, rep in ipairs(dead) do
    if rep ~= except then settle_replica(rep) end
  end
  return #dead
end

local function replicas_reply()
  return redis.call('ZRANGE', REPLICAS, 0, -1)
end

-- Every script but join starts here: the run must be the caller's, and the caller a member.
-- Returns false and the reply to give when it is not.
local function enter(run_id, rep)
  if not load_run() or run.id ~= run_id then return false, {'run'} end
  if not redis.call('ZSCORE', REPLICAS, rep) then return false, {'gone'} end
  return true, nil
end
