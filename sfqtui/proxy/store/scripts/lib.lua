-- Shared by every script (members.lua follows it, and then the scripts; client.py puts them
-- together): the SFQ of semantics §3 on the store's keys, the estimator of §6, and the event log.
-- Every number is kept and exchanged as binary (Lua's struct: the run, the meters, the requests,
-- the events; records.py reads and writes the replicas' side), so that no script formats a number
-- as text or parses one; no float is ever returned as a Lua number (the server would truncate it
-- to an integer). Each script reads the run once, writes it
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
local F = {begin = false, load_run = false, pool_slots = false, pack_state = false, store_now = false, event_time = false, emit = false,
  finish = false, unpack_req = false, ratio_of = false, price = false, learn = false, idle_reset_if_idle = false, meter_of = false,
  set_meter = false, start = false, dispatch_while_free = false, arrive = false, cancel = false, complete = false, enter = false,
  pack_constants = false, pack_merge = false, rid_number = false, oldest_first = false, queued_of = false, running_of = false,
  settle_replica = false, reap = false, replicas_reply = false}
-- A null number in an event record (records.py reads NaN as null).
local NULL = 0 / 0
-- The binary layouts (Lua's struct; records.py has the replicas' side): CONSTANTS and STATE the
-- run's 'c' and 's', RATIO a scope key's ratio, REQ a request, METER a meter, EVENT an event of
-- each kind (F.emit).
local CONSTANTS, STATE, RATIO, REQ, METER = '<dddddddddHc0', '<diiddd', '<ddd', '<dddHc0Hc0Hc0Hc0Hc0', '<d'
local EVENT = {'<BHdd', '<BHddddd', '<BHdddB', '<BHdd', '<BHd', '<BHdddd', '<BHddd', '<BHddd'}

-- keys: the run, the users, the backlog, the replicas, the events, the addresses; then the
-- prefixes of the keys named after a user, a replica or a scope key (keys.py, SCRIPT_KEYS).
function F.begin(keys)
  S = {RUN = keys[1], USERS = keys[2], BACKLOG = keys[3], REPLICAS = keys[4], EVENTS = keys[5], ADDR = keys[6], Q = keys[7],
    RR = keys[8], REP = keys[9], EST = keys[10], ESTW = keys[11], POOL = keys[12],
    run = false, est_params = false, events = {}, est = {}, meters = {}, clock = false, t = false, first_seq = false}
end

-- The run, read once per script: its id and two binary fields (Lua's struct, so that no number
-- is parsed from text): 'c', what never changes (join.lua writes it: slots, ring, started, the
-- estimator's parameters), and 's', what scripts change (seq, in flight, the backlog's size, t,
-- v, the largest meter). ``backlogged`` is the backlog's size, so that nobody waiting costs no call.
function F.load_run()
  local r = redis.call('HMGET', S.RUN, 'id', 's', 'c')
  if not r[1] then return false end
  local seq, inflight, backlogged, t, v, max_meter = struct.unpack(STATE, r[2])
  local slots, ring, started, input_weight, output_weight, alpha, start, window, default_output_tokens, update = struct.unpack(CONSTANTS, r[3])
  local run = {id = r[1], seq = seq, inflight = inflight, backlogged = backlogged, t = t, v = v, max_meter = max_meter, slots = slots,
    ring = ring, started = started}
  local e = {input_weight = input_weight, output_weight = output_weight, alpha = alpha, start = start, window = window,
    default_output_tokens = default_output_tokens, update = update}
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
  return struct.pack(STATE, run.seq, run.inflight, run.backlogged, run.t, run.v, run.max_meter)
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
  if not S.t then
    local run = S.run
    local t = F.store_now() - run.started
    if t > run.t then run.t = t end
    S.t = run.t
  end
  return S.t
end

-- One §7 event (its seq from the run) as a binary record, kept for the stream entry ``finish``
-- writes (records.py writes its JSON): EVENT[kind] (kind: 1 arrive, 2 dispatch, 3 complete, 4
-- cancel, 5 idle reset, 6 merge, 7 limit, 8 start; records.py's KINDS), the length of the request it is about, v,
-- the meter, and the kind's own numbers, ``a``, ``b``, ``c``: a dispatch's cost, ratio and
-- est_output, a completion's output tokens and outcome (0, 1 lost, 2 abandoned), a merge's charge
-- and since_seq, a limit's new limit, a start's request length (its upstream follows the request); then the
-- request (``req``; a merge's names only its user, weight and replica; a limit's is its reason and upstream, a
-- space between),
-- as the store keeps it: the record is only numbers, the request's string goes in as it is. A
-- nil number is written NaN: null. Returns the record.
function F.emit(kind, req, meter, a, b, c)
  local run, events = S.run, S.events
  if not S.first_seq then
    S.first_seq = run.seq
    F.event_time()
  end
  run.seq = run.seq + 1
  local packed = req and req.packed or ''
  local record = struct.pack(EVENT[kind], kind, #packed, run.v, meter or NULL, a or NULL, b or NULL, c or NULL)
  events[#events + 1] = record
  if req then events[#events + 1] = packed end
  return record
end

-- Every script that may change the run ends here: the ratios learned written, the run written
-- back, and the events published as one stream entry: id '<first seq>-<count>', fields e (their
-- records, one after the other) and t (theirs, one double); trimmed to about --ring events.
function F.finish()
  local run = S.run
  for sk, ratio in pairs(S.est) do
    if ratio.learned then redis.call('SET', S.EST .. sk, struct.pack(RATIO, ratio[1], ratio.out, ratio.cap)) end
  end
  if S.first_seq then
    redis.call('XADD', S.EVENTS, 'MINID', '~', math.max(0, S.first_seq - run.ring), string.format('%d-%d', S.first_seq, run.seq - S.first_seq),
      'e', table.concat(S.events), 't', struct.pack('<d', S.t))
  end
  redis.call('HSET', S.RUN, 's', F.pack_state(run))
end

-- A request as the store keeps it (in its user's queue while queued, in its replica's rr hash
-- while running): one string the replica packs (REQ, records.py's pack_request): input tokens,
-- cap (-1 if none), weight, then id, replica, weight as text, user and scope key, each after its length.
function F.unpack_req(packed)
  local n, cap, w, rid, rep, w_text, u, sk = struct.unpack(REQ, packed)
  if cap < 0 then cap = nil end
  return {n = n, cap = cap, w = w, rid = rid, rep = rep, w_text = w_text, u = u, sk = sk, packed = packed}
end

-- The ratio of a scope key: {value}, with the sums of outputs and caps it was learned from
-- (est:<scope key>, RATIO). Kept for the rest of the script, written back by finish once learned from.
function F.ratio_of(sk)
  local ratio = S.est[sk]
  if ratio == nil then
    local stored = redis.call('GET', S.EST .. sk)
    if stored then
      local value, out, cap = struct.unpack(RATIO, stored)
      ratio = {value, out = out, cap = cap, learned = false}
    else
      ratio = {S.est_params.start, out = 0, cap = 0, learned = false}
    end
    S.est[sk] = ratio
  end
  return ratio
end

-- (cost, the ratio or nil, estimated output tokens).
function F.price(req)
  local e = S.est_params
  if req.cap == nil then
    return e.input_weight * req.n + e.output_weight * e.default_output_tokens, nil, e.default_output_tokens
  end
  local ratio = F.ratio_of(req.sk)[1]
  local est_output = req.cap * ratio
  return e.input_weight * req.n + e.output_weight * est_output, ratio, est_output
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
end

-- Nobody waits any more: v <- max(v, max S_i) (§2.5).
function F.idle_reset_if_idle()
  local run = S.run
  if run.backlogged == 0 then
    if run.max_meter > run.v then run.v = run.max_meter end
    F.emit(5, nil, nil)
  end
end

-- A user's meter S_i (false if it has none; the users' hash keeps it as METER), read once per
-- script; set_meter writes it (and the user's weight's text, when given).
function F.meter_of(user)
  local meter = S.meters[user]
  if meter == nil then
    meter = redis.call('HGET', S.USERS, 'm:' .. user)
    if meter then meter = struct.unpack(METER, meter) end
    S.meters[user] = meter
  end
  return meter
end

function F.set_meter(user, meter, w_text)
  if w_text then
    redis.call('HSET', S.USERS, 'm:' .. user, struct.pack(METER, meter), 'w:' .. user, w_text)
  else
    redis.call('HSET', S.USERS, 'm:' .. user, struct.pack(METER, meter))
  end
  S.meters[user] = meter
end

-- Dispatch ``req``, its user's meter being S_i = meter: v <- S_i, charge c / w, take a slot, tell
-- its replica (``own`` gets the event's record and the request if that is ``mine``). Returns the
-- new meter; the caller puts it where the user now is (the backlog, or only the users' hash).
function F.start(req, meter, mine, own)
  local run = S.run
  run.v = meter
  local cost, ratio, est_output = F.price(req)
  local charged = meter + cost / req.w
  if charged > run.max_meter then run.max_meter = charged end
  run.inflight = run.inflight + 1
  redis.call('HSET', S.RR .. req.rep, req.rid, req.packed)
  local record = F.emit(2, req, charged, cost, ratio, est_output)
  if req.rep == mine then
    own[#own + 1] = record
    own[#own + 1] = req.packed
  end
  return charged
end

-- While a slot is free and someone waits: pick argmin (S_i, user) (the sorted set orders equal
-- scores by member bytes, which for UTF-8 is code point order) and start its oldest request.
-- A score goes to the server as a Lua number, which the server writes exactly (%.17g, or the
-- shortest text that reads back as the same double), and comes back as text that reads back so.
function F.dispatch_while_free(mine, own)
  local run = S.run
  while run.inflight < run.slots and run.backlogged > 0 do
    local top = redis.call('ZRANGE', S.BACKLOG, 0, 0, 'WITHSCORES')
    local user = top[1]
    local qkey = S.Q .. user
    local charged = F.start(F.unpack_req(redis.call('LPOP', qkey)), tonumber(top[2]), mine, own)
    local emptied = redis.call('LLEN', qkey) == 0
    if emptied then
      redis.call('ZREM', S.BACKLOG, user)
      run.backlogged = run.backlogged - 1
    else
      redis.call('ZADD', S.BACKLOG, charged, user)
    end
    F.set_meter(user, charged, nil)
    if emptied then F.idle_reset_if_idle() end
  end
end

-- A request joins its user's queue; a user whose queue was empty joins the backlog at
-- S_i <- max(S_i, v) (a new user starts at v). When nobody waits and a slot is free it is the
-- pick at once: it is started without going through its queue and the backlog (the same events
-- and state as queueing and picking it, in a third of the calls).
function F.arrive(req, mine, own)
  local run = S.run
  local meter = F.meter_of(req.u)
  local immediate = run.backlogged == 0 and run.inflight < run.slots
  if immediate or redis.call('RPUSH', S.Q .. req.u, req.packed) == 1 then
    if not meter or meter < run.v then meter = run.v end
    if meter > run.max_meter then run.max_meter = meter end
    F.emit(1, req, meter)
    if immediate then
      F.set_meter(req.u, F.start(req, meter, mine, own), req.w_text)
      F.idle_reset_if_idle()
      return
    end
    F.set_meter(req.u, meter, req.w_text)
    redis.call('ZADD', S.BACKLOG, meter, req.u)
    run.backlogged = run.backlogged + 1
  else
    F.emit(1, req, meter)
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
  F.emit(4, req, F.meter_of(req.u))
  if emptied then F.idle_reset_if_idle() end
  return true
end

-- A dispatched request left its slot (the caller took it out of its replica's rr); ``output``
-- feeds the estimator (nil when unknown); ``outcome``: nil, 1 (lost) or 2 (abandoned).
function F.complete(req, output, outcome)
  S.run.inflight = S.run.inflight - 1
  if output and req.cap then F.learn(req.sk, output, req.cap) end
  F.emit(3, req, F.meter_of(req.u), output, outcome or 0)
end

-- Every script but join starts here: the run must be the caller's, and the caller a member.
-- Returns false and the reply to give when it is not.
function F.enter(run_id, rep)
  if not F.load_run() or S.run.id ~= run_id then return false, {'run'} end
  if not redis.call('ZSCORE', S.REPLICAS, rep) then return false, {'gone'} end
  return true, nil
end
