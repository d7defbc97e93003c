-- Shared by every script (members.lua follows it, and then the scripts; client.py puts them
-- together): the SFQ of semantics §3 on the store's keys, the estimator of §6, and the event log.
-- Every number is kept as text that reads back as the same double; no float is ever returned as a
-- Lua number (Redis would truncate it to an integer). Each script reads the run once, writes it
-- back once and publishes its events as one stream entry, so the fixed cost of a call is shared by
-- all the operations it carries.
--
-- Every script starts with F.begin(KEYS), which makes this call's state S (the keys, in the order
-- keys.py gives them, and what the call has read and will write). On a server with Functions
-- these functions are defined once, when the library is loaded; on Redis 6.2 every call of a
-- script defines them anew, so defining them must cost little: they are fields of one table F
-- (made with every field in place: no rehashing as they are added) and keep the call's state in
-- one table S, so that each closure captures two upvalues (a closure capturing many locals costs
-- a walk of Lua's open upvalues per capture).

local S = false
local F = {begin = false, fmt = false, load_run = false, pack_state = false, store_now = false, event_time = false, emit = false,
  finish = false, unpack_req = false, ratio_of = false, price = false, learn = false, idle_reset_if_idle = false, meter_of = false,
  set_meter = false, start = false, dispatch_while_free = false, arrive = false, cancel = false, complete = false, enter = false,
  pack_constants = false, rid_number = false, oldest_first = false, queued_of = false, running_of = false, settle_replica = false,
  reap = false, replicas_reply = false}

-- keys: the run, the users, the backlog, the replicas, the events, the addresses; then the
-- prefixes of the keys named after a user, a replica or a scope key (keys.py, SCRIPT_KEYS).
function F.begin(keys)
  S = {RUN = keys[1], USERS = keys[2], BACKLOG = keys[3], REPLICAS = keys[4], EVENTS = keys[5], ADDR = keys[6], Q = keys[7],
    RR = keys[8], REP = keys[9], EST = keys[10], ESTW = keys[11], POOL = keys[12],
    run = false, est_params = false, events = {}, dispatched = {}, est = {}, meters = {}, clock = false, t_text = false, first_seq = false,
    CONSTANTS = '<dddddddddHc0Hc0Hc0Hc0', STATE = '<diidddHc0Hc0Hc0', RATIO = '<dddHc0'}
end

-- %.17g reads back as the same double; an integral value has the same digits with %d, which
-- costs a fifth as much (zero, infinities and NaN keep %.17g: -0 and inf print otherwise).
function F.fmt(x)
  if x == math.floor(x) and x ~= 0 and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- The run, read once per script: its id and two binary fields (Lua's struct, so that no number
-- is parsed from text): 'c', what never changes (join.lua writes it: slots, ring, started, the
-- estimator's parameters, and the texts of those that events show), and 's', what scripts change
-- (seq, in flight, the backlog's size, t, v, the largest meter, and the texts of the last three,
-- so that a value whose text is known, a score or a stored meter, is never formatted again).
-- ``backlogged`` is the backlog's size, so that nobody waiting costs no call.
function F.load_run()
  local r = redis.call('HMGET', S.RUN, 'id', 's', 'c')
  if not r[1] then return false end
  local run = {id = r[1], seq = 0, inflight = 0, backlogged = 0, t = 0, v = 0, max_meter = 0, t_text = '', v_text = '', max_text = '',
    slots = 0, ring = 0, started = 0, started_text = ''}
  run.seq, run.inflight, run.backlogged, run.t, run.v, run.max_meter, run.t_text, run.v_text, run.max_text = struct.unpack(S.STATE, r[2])
  local e = {input_weight = 0, output_weight = 0, alpha = 0, start = false, window = 0, default_output_tokens = 0, update = '', default_text = ''}
  local start, start_text
  run.slots, run.ring, run.started, e.input_weight, e.output_weight, e.alpha, start, e.window, e.default_output_tokens, e.update,
    run.started_text, start_text, e.default_text = struct.unpack(S.CONSTANTS, r[3])
  e.start = {start, start_text}
  S.run, S.est_params = run, e
  if run.slots == 0 then F.pool_slots() end
  return true
end

-- --slots auto (the constants' slots 0): the slots are the sum of the upstreams' limits, as the
-- replicas last wrote them (batch.lua's 'l'); none written yet: none.
function F.pool_slots()
  local sum = 0
  for _, limit in ipairs(redis.call('HVALS', S.POOL)) do sum = sum + tonumber(limit) end
  S.run.slots = sum
end

function F.pack_state(run)
  return struct.pack(S.STATE, run.seq, run.inflight, run.backlogged, run.t, run.v, run.max_meter, #run.t_text, run.t_text, #run.v_text,
    run.v_text, #run.max_text, run.max_text)
end

function F.store_now()
  if not S.clock then
    local now = redis.call('TIME')
    S.clock = tonumber(now[1]) + tonumber(now[2]) / 1000000
  end
  return S.clock
end

-- Seconds since the run started, never going back: the same for every event of one script.
function F.event_time()
  if not S.t_text then
    local run = S.run
    local t = F.store_now() - run.started
    if t > run.t then run.t, run.t_text = t, F.fmt(t) end
    S.t_text = run.t_text
  end
  return S.t_text
end

-- One §7 event (its seq from the run), kept for the stream entry ``finish`` writes. ``req``: the
-- request it is about, or only its user (uj, w_text, rep: a merge names no request).
function F.emit(kind, req, cost_text, meter_text, tail)
  local run = S.run
  local seq = run.seq
  run.seq = seq + 1
  if not S.first_seq then S.first_seq = seq end
  local about = 'null,"user":null,"cost":null'
  if req then
    about = (req.rid and ('"' .. req.rid .. '"') or 'null') .. ',"user":' .. req.uj .. ',"cost":' .. (cost_text or 'null')
    tail = ',"weight":' .. req.w_text .. ',"replica":' .. req.rep .. (tail or '')
  end
  S.events[#S.events + 1] = '{"seq":' .. string.format('%d', seq) .. ',"t":' .. F.event_time() .. ',"kind":"' .. kind ..
    '","scheduler":"sfq","request_id":' .. about .. ',"v":' .. run.v_text .. ',"meter":' .. (meter_text or 'null') ..
    ',"deficit":null' .. (tail or '') .. '}'
end

-- Every script that may change the run ends here: the ratios learned written, the run written
-- back, and the events published as one stream entry: id '<first seq>-<count>', fields e (their
-- JSON, one per line), t (theirs: one per script), and d if some were dispatches (JSON: one
-- [replica, request id, cost, user] each, for the replicas to tell); trimmed to about --ring events.
function F.finish()
  local run = S.run
  for sk, ratio in pairs(S.est) do
    if ratio.learned then redis.call('SET', S.EST .. sk, struct.pack(S.RATIO, ratio[1], ratio.out, ratio.cap, #ratio[2], ratio[2])) end
  end
  if S.first_seq then
    local entry = {'XADD', S.EVENTS, 'MINID', '~', string.format('%d', math.max(0, S.first_seq - run.ring)),
      string.format('%d-%d', S.first_seq, #S.events), 'e', table.concat(S.events, '\n'), 't', S.t_text}
    if #S.dispatched > 0 then
      entry[#entry + 1] = 'd'
      entry[#entry + 1] = '[' .. table.concat(S.dispatched, ',') .. ']'
    end
    redis.call(unpack(entry))
  end
  redis.call('HSET', S.RUN, 's', F.pack_state(run))
end

-- A request as the store keeps it (in its user's queue while queued, in its replica's rr hash
-- while running): one string the replica packs (Python's struct: '<ddd', then six strings each
-- after its length as '<H'): input tokens, cap (-1 if none), weight, id, replica, weight as text,
-- user, scope key, user as JSON.
function F.unpack_req(packed)
  local n, cap, w, rid, rep, w_text, u, sk, uj = struct.unpack('<dddHc0Hc0Hc0Hc0Hc0Hc0', packed)
  if cap < 0 then cap = nil end
  return {n = n, cap = cap, w = w, rid = rid, rep = rep, w_text = w_text, u = u, sk = sk, uj = uj, packed = packed}
end

-- The ratio of a scope key: {value, text}, with the sums of outputs and caps it was learned from
-- (est:<scope key>, binary: value, sums, text). Kept for the rest of the script, written back by
-- finish once learned from.
function F.ratio_of(sk)
  local ratio = S.est[sk]
  if ratio == nil then
    local stored = redis.call('GET', S.EST .. sk)
    if stored then
      local value, out, cap, text = struct.unpack(S.RATIO, stored)
      ratio = {value, text, out = out, cap = cap, learned = false}
    else
      ratio = {S.est_params.start[1], S.est_params.start[2], out = 0, cap = 0, learned = false}
    end
    S.est[sk] = ratio
  end
  return ratio
end

-- (cost, the ratio's text or nil, estimated output tokens' text).
function F.price(req)
  local e = S.est_params
  if req.cap == nil then
    return e.input_weight * req.n + e.output_weight * e.default_output_tokens, nil, e.default_text
  end
  local ratio = F.ratio_of(req.sk)
  local est_output = req.cap * ratio[1]
  return e.input_weight * req.n + e.output_weight * est_output, ratio[2], F.fmt(est_output)
end

-- A completion's output over its cap, learned as §6 says (the window's pairs in estw:<scope key>).
function F.learn(sk, output, cap)
  local e, ratio = S.est_params, F.ratio_of(sk)
  ratio.learned = true
  if e.update == 'ema' then
    ratio[1] = (1.0 - e.alpha) * ratio[1] + e.alpha * (output / cap)
  else
    ratio.out, ratio.cap = ratio.out + output, ratio.cap + cap
    if e.update == 'window' then
      local pairs_key = S.ESTW .. sk
      if redis.call('RPUSH', pairs_key, struct.pack('<dd', output, cap)) > e.window then
        local old_out, old_cap = struct.unpack('<dd', redis.call('LPOP', pairs_key))
        ratio.out, ratio.cap = ratio.out - old_out, ratio.cap - old_cap
      end
    end
    ratio[1] = ratio.out / ratio.cap
  end
  ratio[2] = F.fmt(ratio[1])
end

-- Nobody waits any more: v <- max(v, max S_i) (§2.5).
function F.idle_reset_if_idle()
  local run = S.run
  if run.backlogged == 0 then
    if run.max_meter > run.v then run.v, run.v_text = run.max_meter, run.max_text end
    F.emit('idle_reset', nil, nil, nil, nil)
  end
end

-- A user's meter S_i as text (false if it has none), read once per script; set_meter writes it
-- (and the user's weight, when given).
function F.meter_of(user)
  local meter = S.meters[user]
  if meter == nil then
    meter = redis.call('HGET', S.USERS, 'm:' .. user)
    S.meters[user] = meter
  end
  return meter
end

function F.set_meter(user, meter_text, w_text)
  if w_text then
    redis.call('HSET', S.USERS, 'm:' .. user, meter_text, 'w:' .. user, w_text)
  else
    redis.call('HSET', S.USERS, 'm:' .. user, meter_text)
  end
  S.meters[user] = meter_text
end

-- Dispatch ``req``, its user's meter being S_i = meter: v <- S_i, charge c / w, take a slot, tell
-- its replica (``own`` gets it if that is ``mine``). Returns the new meter's text; the caller
-- puts it where the user now is (the backlog, or only the users' hash).
function F.start(req, meter, meter_text, mine, own)
  local run = S.run
  run.v, run.v_text = meter, meter_text
  local cost, ratio_text, est_output_text = F.price(req)
  local charged = meter + cost / req.w
  local charged_text, cost_text = F.fmt(charged), F.fmt(cost)
  if charged > run.max_meter then run.max_meter, run.max_text = charged, charged_text end
  run.inflight = run.inflight + 1
  redis.call('HSET', S.RR .. req.rep, req.rid, req.packed)
  F.emit('dispatch', req, cost_text, charged_text, ',"ratio":' .. (ratio_text or 'null') .. ',"est_output":' .. est_output_text)
  S.dispatched[#S.dispatched + 1] = '[' .. req.rep .. ',"' .. req.rid .. '",' .. cost_text .. ',' .. req.uj .. ']'
  if req.rep == mine then
    own[#own + 1] = req.rid
    own[#own + 1] = cost_text
  end
  return charged_text
end

-- While a slot is free and someone waits: pick argmin (S_i, user) (the sorted set orders equal
-- scores by member bytes, which for UTF-8 is code point order) and start its oldest request.
function F.dispatch_while_free(mine, own)
  local run = S.run
  while run.inflight < run.slots and run.backlogged > 0 do
    local top = redis.call('ZRANGE', S.BACKLOG, 0, 0, 'WITHSCORES')
    local user = top[1]
    local qkey = S.Q .. user
    local charged_text = F.start(F.unpack_req(redis.call('LPOP', qkey)), tonumber(top[2]), top[2], mine, own)
    local emptied = redis.call('LLEN', qkey) == 0
    if emptied then
      redis.call('ZREM', S.BACKLOG, user)
      run.backlogged = run.backlogged - 1
    else
      redis.call('ZADD', S.BACKLOG, charged_text, user)
    end
    F.set_meter(user, charged_text, nil)
    if emptied then F.idle_reset_if_idle() end
  end
end

-- A request joins its user's queue; a user whose queue was empty joins the backlog at
-- S_i <- max(S_i, v) (a new user starts at v). When nobody waits and a slot is free it is the
-- pick at once: it is started without going through its queue and the backlog (the same events
-- and state as queueing and picking it, in a third of the calls).
function F.arrive(req, mine, own)
  local run = S.run
  local meter_text = F.meter_of(req.u)
  local immediate = run.backlogged == 0 and run.inflight < run.slots
  if immediate or redis.call('RPUSH', S.Q .. req.u, req.packed) == 1 then
    local meter = meter_text and tonumber(meter_text)
    if not meter or meter < run.v then meter, meter_text = run.v, run.v_text end
    if meter > run.max_meter then run.max_meter, run.max_text = meter, meter_text end
    F.emit('arrive', req, nil, meter_text, nil)
    if immediate then
      F.set_meter(req.u, F.start(req, meter, meter_text, mine, own), req.w_text)
      F.idle_reset_if_idle()
      return
    end
    F.set_meter(req.u, meter_text, req.w_text)
    redis.call('ZADD', S.BACKLOG, meter_text, req.u)
    run.backlogged = run.backlogged + 1
  else
    F.emit('arrive', req, nil, meter_text, nil)
  end
end

-- A queued request leaves its queue, uncharged (§3: the user leaves the backlog if it was its
-- last). False if it was not queued.
function F.cancel(req)
  local qkey = S.Q .. req.u
  if redis.call('LREM', qkey, 1, req.packed) == 0 then return false end
  local emptied = redis.call('LLEN', qkey) == 0
  if emptied then
    redis.call('ZREM', S.BACKLOG, req.u)
    S.run.backlogged = S.run.backlogged - 1
  end
  F.emit('cancel', req, nil, F.meter_of(req.u), nil)
  if emptied then F.idle_reset_if_idle() end
  return true
end

-- A dispatched request left its slot (the caller took it out of its replica's rr); ``output``
-- feeds the estimator (nil when unknown).
function F.complete(req, output, outcome)
  S.run.inflight = S.run.inflight - 1
  if output and req.cap then F.learn(req.sk, output, req.cap) end
  local tail = ',"output_tokens":' .. (output and string.format('%d', output) or 'null')
  if outcome then tail = tail .. ',"outcome":"' .. outcome .. '"' end
  F.emit('complete', req, nil, F.meter_of(req.u), tail)
end

-- Every script but join starts here: the run must be the caller's, and the caller a member.
-- Returns false and the reply to give when it is not.
function F.enter(run_id, rep)
  if not F.load_run() or S.run.id ~= run_id then return false, {'run'} end
  if not redis.call('ZSCORE', S.REPLICAS, rep) then return false, {'gone'} end
  return true, nil
end
