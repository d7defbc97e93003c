-- A replica joins the group (starting, or coming back after the store was away). The group's run
-- is created if the store has none (first replica, or a store that lost its data).
-- ARGV: address, incarnation (random per process), settings (JSON: slots, ring, estimator),
-- lease seconds, a new run id (used only if there is no run),
-- then what the replica still holds from an earlier membership of this process:
-- n, the request ids still running upstream under store slots (n of them),
-- m, the requests that ended while the store was away (m pairs: request id, output tokens or ''),
-- h, slots held by requests it dispatched on its own while the store was away,
-- u, the charges it made on its own (u triples: user, charge c/w summed, weight).
-- Reply: {run id, started, replica, next request number, replicas, dispatched for this replica,
-- '1' if the store had settled this replica (then the n running requests hold slots outside the log)}
-- or {'settings', the group's settings}.
local address, incarnation, settings, lease = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = store_now()
local created = redis.call('EXISTS', RUN) == 0
if created then
  redis.call('HSET', RUN, 'id', ARGV[5], 'started', fmt(now), 'seq', '0', 't', '0', 'v', '0', 'max_meter', '0',
    'inflight', '0', 'slots', tostring(cjson.decode(settings).slots), 'ring', tostring(cjson.decode(settings).ring),
    'settings', settings, 'next_replica', '0')
  -- The estimator's parameters as fields of their own, read by every script without decoding
  -- JSON (cjson reads numbers exactly; %.17g writes them back exactly).
  local est = cjson.decode(settings).estimator
  for _, name in ipairs(EST) do
    local value = est[name]
    if type(value) == 'number' then value = fmt(value) end
    redis.call('HSET', RUN, 'est_' .. name, value)
  end
end
local group_settings = redis.call('HGET', RUN, 'settings')
if group_settings ~= settings then return {'settings', group_settings} end
load_run()
local rep = redis.call('HGET', P .. 'addr', address)
if not rep then
  rep = tostring(redis.call('HINCRBY', RUN, 'next_replica', 1) - 1)
  redis.call('HSET', P .. 'addr', address, rep)
end
local rkey = P .. 'rep:' .. rep
local a = 6
local keep, finished = {}, {}
local n = tonumber(ARGV[a]); a = a + 1
for k = 1, n do keep[ARGV[a]] = true; a = a + 1 end
local m = tonumber(ARGV[a]); a = a + 1
for k = 1, m do finished[ARGV[a]] = ARGV[a + 1]; a = a + 2 end
local held = tonumber(ARGV[a]); a = a + 1
local member = redis.call('ZSCORE', REPLICAS, rep) and redis.call('HGET', rkey, 'incarnation') == incarnation
local settled = '0'
if member then
  -- Back after the store was away: its queued requests went local, so they leave the store's
  -- queues; requests that ended meanwhile complete now; others dispatched for it, unused, end lost.
  local queued = redis.call('SMEMBERS', P .. 'rq:' .. rep)
  for _, rid in ipairs(queued) do cancel(get_req(rid)) end
  for _, rid in ipairs(redis.call('SMEMBERS', P .. 'rr:' .. rep)) do
    if finished[rid] then
      complete(get_req(rid), tonumber(finished[rid]), nil)
    elseif not keep[rid] then
      complete(get_req(rid), nil, 'lost')
    end
  end
else
  -- A new process on this address, or one the others settled while it was away.
  if redis.call('ZSCORE', REPLICAS, rep) or redis.call('SCARD', P .. 'rq:' .. rep) + redis.call('SCARD', P .. 'rr:' .. rep) > 0 then
    settle_replica(rep)
  end
  if n > 0 then
    settled = '1'
    held = held + n
  end
end
-- Charges made while the store was away raise the meters (never lowering one). A new run (the
-- store lost its data) starts from nothing: those charges belong to the run that is gone.
local u = tonumber(ARGV[a]); a = a + 1
if created then u = 0 end
for k = 1, u do
  local user, charge = ARGV[a], tonumber(ARGV[a + 1])
  redis.call('HSET', P .. 'weight', user, ARGV[a + 2])
  a = a + 3
  local meter = meter_of(user)
  if meter == nil then meter = run.v end
  meter = meter + charge
  redis.call('HSET', METER, user, fmt(meter))
  if redis.call('ZSCORE', BACKLOG, user) then redis.call('ZADD', BACKLOG, fmt(meter), user) end
  if meter > run.max_meter then run.max_meter = meter end
end
local old_held = tonumber(redis.call('HGET', rkey, 'held') or '0')
redis.call('HSET', rkey, 'incarnation', incarnation, 'address', address, 'held', tostring(held))
run.inflight = run.inflight + held - old_held
redis.call('ZADD', REPLICAS, fmt(now + lease), rep)
reap(now, rep)
local own = dispatch_while_free(rep)
save_run()
-- Request numbers of a replica's new process start at the run's seq: an earlier process numbered
-- fewer requests than the events they made, so ids never repeat within a run.
return {run.id, fmt(run.started), rep, run.seq, replicas_reply(), own, settled}
