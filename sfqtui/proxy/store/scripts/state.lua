-- The §8 snapshot, read in one step: run, last seq, t, v, slots, in flight, replicas, and per user
-- meter, weight, queued and running (t and v as two binary doubles, each meter as the users' hash
-- keeps it, binary, each weight as text; running counted over every replica's rr).
if not F.load_run() then return {'none'} end
local running = {}
for rep = 0, tonumber(redis.call('HGET', S.RUN, 'next_replica')) - 1 do
  for _, req in ipairs(F.running_of(tostring(rep))) do running[req.u] = (running[req.u] or 0) + 1 end
end
local fields = redis.call('HGETALL', S.USERS)
local weights, rows = {}, {}
for k = 1, #fields, 2 do
  if string.sub(fields[k], 1, 2) == 'w:' then weights[string.sub(fields[k], 3)] = fields[k + 1] end
end
for k = 1, #fields, 2 do
  if string.sub(fields[k], 1, 2) == 'm:' then
    local user = string.sub(fields[k], 3)
    rows[#rows + 1] = {user, fields[k + 1], weights[user] or '1', redis.call('LLEN', S.Q .. user), running[user] or 0}
  end
end
local t = math.max(F.store_now() - S.run.started, S.run.t)
return {'ok', S.run.id, S.run.seq - 1, struct.pack('<dd', t, S.run.v), S.run.slots, S.run.inflight, F.replicas_reply(), rows}
