-- The §8 snapshot, read in one step: run, last seq, t, v, slots, in flight, replicas, and per user
-- meter, weight, queued and running (numbers as text).
if not load_run() then return {'none'} end
local users = redis.call('HGETALL', METER)
local rows = {}
for k = 1, #users, 2 do
  local user = users[k]
  rows[#rows + 1] = {user, users[k + 1], redis.call('HGET', P .. 'weight', user) or '1',
    redis.call('LLEN', P .. 'q:' .. user), tonumber(redis.call('HGET', P .. 'busy', user) or '0')}
end
local t = store_now() - run.started
if run.t > t then t = run.t end
return {'ok', run.id, run.seq - 1, fmt(t), fmt(run.v), run.slots, run.inflight, replicas_reply(), rows}
