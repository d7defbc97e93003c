-- Replica ARGV[2] is alive for ARGV[3] more seconds; any replica whose lease ran out is settled
-- (its queued requests cancelled, its running ones completed as lost) and its slots dispatched.
-- Reply: {'ok', {request id, cost, ...} dispatched for this replica, replicas}, or {'run'} / {'gone'}.
local ok, refusal = enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep = ARGV[2]
local now = store_now()
redis.call('ZADD', REPLICAS, 'XX', fmt(now + tonumber(ARGV[3])), rep)
local own = {}
if reap(now, rep) > 0 then own = dispatch_while_free(rep) end
save_run()
return {'ok', own, replicas_reply()}
