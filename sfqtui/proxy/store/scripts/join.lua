-- A replica joins the group (starting, or coming back after the store was away). The group's run
-- is created if the store has none (first replica, or a store that lost its data).
-- ARGV: address, incarnation (random per process), settings (JSON: slots, ring, estimator),
-- lease seconds, a new run id (used only if there is no run),
-- then what the replica still holds from an earlier membership of this process:
-- n, the request ids still running upstream under store slots (n of them),
-- m, the requests that ended while the store was away (m pairs: request id, output tokens or ''),
-- h, slots held by requests it dispatched on its own while the store was away,
-- the last seq it had read before it served on its own ('' if it did not),
-- u, the charges it made on its own (u triples: user, charge c/w summed, weight).
-- Reply: {run id, started (a binary double), replica, next request number, replicas, the
-- dispatches made for this replica (each its record, F.emit, and its request, in one string),
-- '1' if the store had settled this replica (then the n running requests hold slots outside the log)}
-- or {'settings', the group's settings}.
local address, incarnation, settings, lease = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = F.store_now()
local created = redis.call('EXISTS', S.RUN) == 0
if created then
  local run = {seq = 0, inflight = 0, backlogged = 0, t = 0, v = 0, max_meter = 0}
  redis.call('HSET', S.RUN, 'id', ARGV[5], 'settings', settings, 'next_replica', '0', 'c', F.pack_constants(cjson.decode(settings), now),
    's', F.pack_state(run))
end
local group_settings = redis.call('HGET', S.RUN, 'settings')
if group_settings ~= settings then return {'settings', group_settings} end
F.load_run()
local run = S.run
local rep = redis.call('HGET', S.ADDR, address)
if not rep then
  rep = tostring(redis.call('HINCRBY', S.RUN, 'next_replica', 1) - 1)
  redis.call('HSET', S.ADDR, address, rep)
end
local rkey, rr = S.REP .. rep, S.RR .. rep
local a = 6
local keep, finished = {}, {}
local n = tonumber(ARGV[a]); a = a + 1
for k = 1, n do keep[ARGV[a]] = true; a = a + 1 end
local m = tonumber(ARGV[a]); a = a + 1
for k = 1, m do finished[ARGV[a]] = ARGV[a + 1]; a = a + 2 end
local held = tonumber(ARGV[a]); a = a + 1
local member = redis.call('ZSCORE', S.REPLICAS, rep) and redis.call('HGET', rkey, 'incarnation') == incarnation
local settled = '0'
if member then
  -- Back after the store was away: its queued requests went local, so they leave the store's
  -- queues; requests that ended meanwhile complete now; others dispatched for it, unused, end lost.
  for _, req in ipairs(F.queued_of(rep)) do F.cancel(req) end
  for _, req in ipairs(F.running_of(rep)) do
    if finished[req.rid] or not keep[req.rid] then
      redis.call('HDEL', rr, req.rid)
      if finished[req.rid] then F.complete(req, tonumber(finished[req.rid]), nil) else F.complete(req, nil, 1) end
    end
  end
else
  -- A new process on this address, or one the others settled while it was away.
  if redis.call('ZSCORE', S.REPLICAS, rep) or redis.call('HLEN', rr) > 0 or #F.queued_of(rep) > 0 then
    F.settle_replica(rep)
  end
  if n > 0 then
    settled = '1'
    held = held + n
  end
end
-- Charges made while the store was away raise the meters (never lowering one), each raise an
-- event of kind merge (docs/semantics.md §12). A new run (the store lost its data) starts from
-- nothing: those charges belong to the run that is gone.
local since = tonumber(ARGV[a]); a = a + 1
local u = tonumber(ARGV[a]); a = a + 1
if created then u = 0 end
for k = 1, u do
  local user, charge = ARGV[a], tonumber(ARGV[a + 1])
  local meter = (F.meter_of(user) or run.v) + charge
  F.set_meter(user, meter, ARGV[a + 2])
  F.emit(6, F.pack_merge(user, ARGV[a + 2], rep), meter, charge, since)
  a = a + 3
  if redis.call('ZSCORE', S.BACKLOG, user) then redis.call('ZADD', S.BACKLOG, meter, user) end
  if meter > run.max_meter then run.max_meter = meter end
end
local old_held = tonumber(redis.call('HGET', rkey, 'held') or '0')
redis.call('HSET', rkey, 'incarnation', incarnation, 'address', address, 'held', tostring(held))
run.inflight = run.inflight + held - old_held
redis.call('ZADD', S.REPLICAS, now + lease, rep)
F.reap(now, rep)
local own = {}
F.dispatch_while_free(rep, own)
F.finish()
-- Request numbers of a replica's new process start at the run's seq: an earlier process numbered
-- fewer requests than the events they made, so ids never repeat within a run.
return {run.id, struct.pack(METER, run.started), rep, run.seq, F.replicas_reply(), table.concat(own), settled}
