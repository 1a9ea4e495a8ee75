-- Shared by every mission script: KEYS[1] is the mission's meta hash, KEYS[2] its tasks hash
-- (task id -> task state as JSON). The statuses below must equal TERMINAL_TASK_STATUSES in
-- src/shared/contracts.ts (test/shared/store/lua.test.ts checks it).
local function terminal(s)
  return s == 'completed' or s == 'failed' or s == 'skipped' or s == 'cancelled'
end
local function get(taskId)
  local raw = redis.call('HGET', KEYS[2], taskId)
  if not raw then return nil end
  return cjson.decode(raw)
end
-- meta 'open' counts the tasks not yet terminal, so settle reads every task once, at the end,
-- instead of on every gate (that made a mission O(tasks^2)).
local function put(taskId, t)
  local old = redis.call('HGET', KEYS[2], taskId)
  redis.call('HSET', KEYS[2], taskId, cjson.encode(t))
  local was = old and not terminal(cjson.decode(old).status)
  local is = not terminal(t.status)
  if was and not is then redis.call('HINCRBY', KEYS[1], 'open', -1)
  elseif is and not was then redis.call('HINCRBY', KEYS[1], 'open', 1) end
end
-- Sets the mission's final status once, when no task is open. Returns 1 when it did.
local function settle(now)
  local open = redis.call('HGET', KEYS[1], 'open')
  if open and tonumber(open) > 0 then return 0 end
  if redis.call('HGET', KEYS[1], 'finishedAt') then return 0 end
  local all = redis.call('HGETALL', KEYS[2])
  local completed, total = 0, 0
  for i = 2, #all, 2 do
    local t = cjson.decode(all[i])
    total = total + 1
    if not terminal(t.status) then return 0 end
    if t.status == 'completed' then completed = completed + 1 end
  end
  local final
  if redis.call('HGET', KEYS[1], 'cancelled') == '1' then final = 'cancelled'
  elseif completed == total then final = 'done'
  elseif completed == 0 then final = 'failed'
  else final = 'partial' end
  redis.call('HSET', KEYS[1], 'status', final, 'finishedAt', now)
  return 1
end
