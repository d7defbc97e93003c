-- A request joins its user's queue on replica ARGV[2], then whatever the free slots allow is
-- dispatched. ARGV: run, replica, request id, user, user as JSON, weight, input tokens, output cap
-- ('' if none), estimator scope key.
-- Reply: {'ok', {request id, cost, ...} dispatched for this replica}, or {'run'} / {'gone'}.
local ok, refusal = enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep, rid, user = ARGV[2], ARGV[3], ARGV[4]
local req = {rid = rid, u = user, uj = ARGV[5], rep = rep, w = ARGV[6]}
redis.call('HSET', P .. 'req:' .. rid, 'u', user, 'uj', ARGV[5], 'rep', rep, 'w', ARGV[6], 'n', ARGV[7], 'cap', ARGV[8], 'sk', ARGV[9], 'st', 'q')
redis.call('SADD', P .. 'rq:' .. rep, rid)
local qkey = P .. 'q:' .. user
local meter = meter_of(user)
if redis.call('LLEN', qkey) == 0 then
  -- The join rule S_i <- max(S_i, v); a new user starts at v.
  if meter == nil or meter < run.v then meter = run.v end
  redis.call('HSET', METER, user, fmt(meter))
  redis.call('HSET', P .. 'weight', user, ARGV[6])
  if meter > run.max_meter then run.max_meter = meter end
  redis.call('ZADD', BACKLOG, fmt(meter), user)
end
redis.call('RPUSH', qkey, rid)
emit('arrive', req, run.v, meter, nil, nil)
local own = dispatch_while_free(rep)
save_run()
return {'ok', own}
