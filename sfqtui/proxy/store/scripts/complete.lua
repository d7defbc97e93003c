-- A request dispatched for replica ARGV[2] left its slot (answered, failed or abandoned); the
-- slot goes to the next pick. ARGV: run, replica, request id, output tokens ('' if unknown),
-- '1' if the slot was held outside the log (a request the replica ran on its own while the store
-- was away) and only the slot is given back.
-- Reply: {'ok', {request id, cost, ...} dispatched for this replica}, or {'run'} / {'gone'}.
local ok, refusal = enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep = ARGV[2]
if ARGV[5] == '1' then
  redis.call('HINCRBY', P .. 'rep:' .. rep, 'held', -1)
  run.inflight = run.inflight - 1
else
  local req = get_req(ARGV[3])
  if req and req.st == 'r' and req.rep == rep then complete(req, tonumber(ARGV[4]), nil) end
end
local own = dispatch_while_free(rep)
save_run()
return {'ok', own}
