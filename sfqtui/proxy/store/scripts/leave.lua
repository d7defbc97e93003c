-- Replica ARGV[2] stops (after draining): whatever it still holds is settled and its slots
-- dispatched to the others. ARGV: run, replica.
local ok, refusal = enter(ARGV[1], ARGV[2])
if not ok then return refusal end
settle_replica(ARGV[2])
dispatch_while_free(nil)
save_run()
return {'ok'}
