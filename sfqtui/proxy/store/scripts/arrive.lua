-- A request joins its user's queue on replica ARGV[2], then whatever the free slots allow is
-- dispatched. ARGV: run, replica, request id, its number on the replica, user, user as JSON,
-- weight, input tokens, output cap ('' if none), estimator scope key.
-- Reply: {'ok', {request id, cost, ...} dispatched for this replica}, or {'run'} / {'gone'}.
local ok, refusal = enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep, rid, user = ARGV[2], ARGV[3], ARGV[5]
redis.call('HSET', P .. 'rep:' .. rep, 'next', string.format('%d', tonumber(ARGV[4]) + 1))
redis.call('HSET', P .. 'req:' .. rid, 'u', user, 'uj', ARGV[6], 'rep', rep, 'w', ARGV[7], 'n', ARGV[8], 'cap', ARGV[9], 'sk', ARGV[10], 'st', 'q')
redis.call('SADD', P .. 'rq:' .. rep, rid)
redis.call('HSET', P .. 'weight', user, ARGV[7])
local qkey = P .. 'q:' .. user
if redis.call('LLEN', qkey) == 0 then
  -- The join rule S_i <- max(S_i, v); a new user starts at v.
  local meter = meter_of(user)
  if meter == nil or meter < run.v then meter = run.v end
  redis.call('HSET', METER, user, fmt(meter))
  if meter > run.max_meter then run.max_meter = meter end
  redis.call('ZADD', BACKLOG, fmt(meter), user)
end
redis.call('RPUSH', qkey, rid)
emit('arrive', get_req(rid), run.v, meter_of(user), nil, nil)
local own = dispatch_while_free(rep)
save_run()
return {'ok', own}
