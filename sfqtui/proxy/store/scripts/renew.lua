-- Replica ARGV[2] is alive for ARGV[3] more seconds; any replica whose lease ran out is settled
-- (its queued requests cancelled, its running ones completed as lost) and its slots dispatched.
-- Reply: {'ok', the dispatches made for this replica (each its record, F.emit, and its request, in one
-- string), replicas}, or {'run'} / {'gone'}.
local ok, refusal = F.enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep = ARGV[2]
local now = F.store_now()
redis.call('ZADD', S.REPLICAS, 'XX', now + tonumber(ARGV[3]), rep)
local own = {}
if F.reap(now, rep) > 0 then F.dispatch_while_free(rep, own) end
F.finish()
return {'ok', table.concat(own), F.replicas_reply()}
