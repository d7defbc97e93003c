-- The group's membership, after lib.lua: in the library, and in front of the scripts that change
-- it or read it whole (join, renew, leave, state) on Redis 6.2, where batch.lua, which runs for
-- every request, goes without it.

-- 'c' of a new run: settings is the group's (JSON), started the store's time.
function F.pack_constants(settings, started)
  local e = settings.estimator
  return struct.pack(CONSTANTS, settings.slots, settings.ring, started, e.input_weight, e.output_weight, e.alpha, e.start_ratio, e.window,
    e.default_output_tokens, #e.update, e.update)
end

-- What a merge event names (a request as REQ, without one): its user, weight and replica.
function F.pack_merge(user, w_text, rep)
  return {u = user, packed = struct.pack(REQ, 0, -1, 0, 0, '', #rep, rep, #w_text, w_text, #user, user, 0, '')}
end

function F.rid_number(req) return tonumber(string.match(req.rid, '%d+$')) end

function F.oldest_first(reqs)
  table.sort(reqs, function(a, b) return F.rid_number(a) < F.rid_number(b) end)
  return reqs
end

-- A replica's requests: queued (found in the users' queues) or running (its rr hash), oldest first.
function F.queued_of(rep)
  local reqs = {}
  for _, user in ipairs(redis.call('ZRANGE', S.BACKLOG, 0, -1)) do
    for _, packed in ipairs(redis.call('LRANGE', S.Q .. user, 0, -1)) do
      local req = F.unpack_req(packed)
      if req.rep == rep then reqs[#reqs + 1] = req end
    end
  end
  return F.oldest_first(reqs)
end

function F.running_of(rep)
  local reqs = {}
  for _, packed in ipairs(redis.call('HVALS', S.RR .. rep)) do reqs[#reqs + 1] = F.unpack_req(packed) end
  return F.oldest_first(reqs)
end

-- A replica whose lease ran out (or that left): its queued requests cancelled, its running ones
-- completed as lost; nothing refunded. Their slots go back to the pool (the caller dispatches).
function F.settle_replica(rep)
  for _, req in ipairs(F.queued_of(rep)) do F.cancel(req) end
  for _, req in ipairs(F.running_of(rep)) do F.complete(req, nil, 1) end
  redis.call('DEL', S.RR .. rep)
  local rkey = S.REP .. rep
  S.run.inflight = S.run.inflight - tonumber(redis.call('HGET', rkey, 'held') or '0')
  redis.call('HSET', rkey, 'held', '0')
  redis.call('ZREM', S.REPLICAS, rep)
end

-- Settle every replica whose lease ended before now (a survivor does it, inside its own script).
function F.reap(now, except)
  local dead = redis.call('ZRANGEBYSCORE', S.REPLICAS, '-inf', '(' .. string.format('%.17g', now))
  for _, rep in ipairs(dead) do
    if rep ~= except then F.settle_replica(rep) end
  end
  return #dead
end

function F.replicas_reply()
  return redis.call('ZRANGE', S.REPLICAS, 0, -1)
end

