-- Replica ARGV[2]'s operations, in the order it sent them, each followed by whatever the free
-- slots allow (one call carries every operation its replica had ready at once).
-- ARGV: run, replica, then the operations ("request": as unpack_req reads it):
--   'a', request: it joins its user's queue;
--   'c', request, output tokens ('' if unknown), held: a request dispatched for this replica left
--        its slot (answered, failed or abandoned); held '1': it ran on a slot held outside the log
--        (dispatched by the replica on its own while the store was away) and only the slot is
--        given back (the request may be '');
--   'x', request: its client went away while it was queued (or the replica is draining); if a
--        dispatch got there first it is completed as abandoned, charged; if it had ended, nothing;
--   'l', upstream, limit, reason: --slots auto: the upstream's limit is now this (the group's slots are the
--        limits' sum; the replicas in front of one upstream read the same engine, the last word stands);
--        a limit event, before the dispatches a rise lets go;
--   's', request, upstream: a request dispatched for this replica began running in its engine (the
--        upstream said so): a start event, at this call's time, if it still runs.
-- Reply: {'ok', the dispatches made for this replica: each its record (F.emit) and its request, in
-- one string}, or {'run'} / {'gone'}.
local ok, refusal = F.enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep = ARGV[2]
local own = {}
local a = 3
while a <= #ARGV do
  local op = ARGV[a]
  if op == 'a' then
    F.arrive(F.unpack_req(ARGV[a + 1]), rep, own)
    a = a + 2
  elseif op == 'c' then
    if ARGV[a + 3] == '1' then
      redis.call('HINCRBY', S.REP .. rep, 'held', -1)
      S.run.inflight = S.run.inflight - 1
    else
      local req = F.unpack_req(ARGV[a + 1])
      if redis.call('HDEL', S.RR .. rep, req.rid) == 1 then F.complete(req, tonumber(ARGV[a + 2]), nil) end
    end
    a = a + 4
  elseif op == 's' then
    if redis.call('HEXISTS', S.RR .. rep, F.unpack_req(ARGV[a + 1]).rid) == 1 then
      F.emit(8, {packed = ARGV[a + 1] .. ARGV[a + 2]}, nil, #ARGV[a + 1])
    end
    a = a + 3
  elseif op == 'l' then
    redis.call('HSET', S.POOL, ARGV[a + 1], ARGV[a + 2])
    F.pool_slots()
    F.emit(7, {packed = ARGV[a + 3] .. ' ' .. ARGV[a + 1]}, nil, tonumber(ARGV[a + 2]))
    a = a + 4
  else
    local req = F.unpack_req(ARGV[a + 1])
    if not F.cancel(req) and redis.call('HDEL', S.RR .. rep, req.rid) == 1 then F.complete(req, nil, 2) end
    a = a + 2
  end
  F.dispatch_while_free(rep, own)
end
F.finish()
return {'ok', table.concat(own)}
