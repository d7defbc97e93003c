-- The client of a request queued on replica ARGV[2] went away (or the replica is draining).
-- ARGV: run, replica, request id.
-- Reply: {'cancelled', {}}; {'completed', dispatched} if a dispatch got there first (it is
-- completed as abandoned, charged, its slot dispatched); {'over', {}} if it had already ended;
-- or {'run'} / {'gone'}. ``dispatched``: {request id, cost, ...} dispatched for this replica.
local ok, refusal = enter(ARGV[1], ARGV[2])
if not ok then return refusal end
local rep = ARGV[2]
local req = get_req(ARGV[3])
local reply = {'over', {}}
if req and req.rep == rep then
  if req.st == 'q' then
    cancel(req)
    reply = {'cancelled', {}}
  else
    complete(req, nil, 'abandoned')
    reply = {'completed', dispatch_while_free(rep)}
  end
end
save_run()
return reply
