-- Replica ARGV[2] stops (after draining): whatever it still holds is settled and its slots
-- dispatched to the others. ARGV: run, replica.
local ok, refusal = F.enter(ARGV[1], ARGV[2])
if not ok then return refusal end
F.settle_replica(ARGV[2])
F.dispatch_while_free(nil, {})
F.finish()
return {'ok'}
