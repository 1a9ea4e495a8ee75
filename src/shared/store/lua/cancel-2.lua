-- Cancels a mission: every task that has not started is cancelled now; running ones are
-- cancelled by their gates once their CLIs are killed.
-- KEYS: 1 meta, 2 tasks.  ARGV: 1 now.
-- Returns { code, settled, cancelled[], running[] }; code 0 = ok, -2 = unknown mission.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return { -2 } end
if status ~= 'running' then return { 0, 1, {}, {} } end
redis.call('HSET', KEYS[1], 'cancelled', '1')
local all = redis.call('HGETALL', KEYS[2])
local cancelled, running = {}, {}
for i = 1, #all, 2 do
  local t = cjson.decode(all[i + 1])
  if t.status == 'pending' or t.status == 'queued' or t.status == 'retrying' or t.status == 'needs_input'
    or t.status == 'awaiting_approval' then
    t.status = 'cancelled'
    t.error = 'mission cancelled'
    t.finishedAt = ARGV[1]
    put(all[i], t)
    table.insert(cancelled, all[i])
  elseif not terminal(t.status) then
    table.insert(running, all[i])
  end
end
local settled = settle(ARGV[1])
return { 0, settled, cancelled, running }
