/**
 * Lua scripts for the transitions that must be atomic across hosts. Each runs on the keys of one
 * mission (one hash slot). Task states are JSON in the `tasks` hash; the graph hash holds each
 * task's dependencies and dependents.
 */

const COMMON = `
local function terminal(s)
  return s == 'completed' or s == 'failed' or s == 'skipped' or s == 'cancelled'
end
local function get(taskId)
  local raw = redis.call('HGET', KEYS[2], taskId)
  if not raw then return nil end
  return cjson.decode(raw)
end
-- meta 'open' counts the tasks not yet terminal (missions created before it have none), so settle
-- reads every task once, at the end, instead of on every gate: that made a mission O(tasks²).
local function put(taskId, t)
  local old = redis.call('HGET', KEYS[2], taskId)
  redis.call('HSET', KEYS[2], taskId, cjson.encode(t))
  if redis.call('HEXISTS', KEYS[1], 'open') == 0 then return end
  local was = old and not terminal(cjson.decode(old).status)
  local is = not terminal(t.status)
  if was and not is then redis.call('HINCRBY', KEYS[1], 'open', -1)
  elseif is and not was then redis.call('HINCRBY', KEYS[1], 'open', 1) end
end
local function settle(now)
  local open = redis.call('HGET', KEYS[1], 'open')
  if open and tonumber(open) > 0 then return 0 end
  local status = redis.call('HGET', KEYS[1], 'status')
  local all = redis.call('HGETALL', KEYS[2])
  local completed, total = 0, 0
  for i = 2, #all, 2 do
    local t = cjson.decode(all[i])
    total = total + 1
    if not terminal(t.status) then return 0 end
    if t.status == 'completed' then completed = completed + 1 end
  end
  if redis.call('HGET', KEYS[1], 'finishedAt') then return 0 end
  local final
  if redis.call('HGET', KEYS[1], 'cancelled') == '1' then final = 'cancelled'
  elseif completed == total then final = 'done'
  elseif completed == 0 then final = 'failed'
  else final = 'partial' end
  redis.call('HSET', KEYS[1], 'status', final, 'finishedAt', now)
  return 1
end
`;

/**
 * Moves a task through running/verifying/reviewing (or, with an empty status, only patches its
 * fields), only for the attempt that is current and not finished: a stale or duplicated job
 * cannot rewind a task.
 * KEYS: meta, tasks. ARGV: taskId, attempt, status, patch JSON.
 */
export const MARK_SCRIPT = `${COMMON}
local t = get(ARGV[1])
if not t then return 0 end
if t.attempts ~= tonumber(ARGV[2]) or terminal(t.status) or t.status == 'needs_input' then return 0 end
if ARGV[3] ~= '' then t.status = ARGV[3] end
local patch = cjson.decode(ARGV[4])
for k, v in pairs(patch) do t[k] = v end
put(ARGV[1], t)
return 1
`;

/**
 * The gate's transition, exactly once per attempt. A replay (the gate job delivered twice) is
 * not applied again but returns what the first run released, so the caller can re-add the same
 * flows idempotently.
 * KEYS: meta, tasks, graph. ARGV: taskId, attempt, action, patch JSON, now.
 * Returns JSON { applied, released, skipped, settled, missionStatus }.
 */
export const SETTLE_SCRIPT = `${COMMON}
local taskId, attempt, action = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local patch = cjson.decode(ARGV[4])
local now = ARGV[5]
local t = get(taskId)
if not t then return cjson.encode({ applied = false, error = 'unknown task' }) end
local function result(applied, released, skipped)
  local status = redis.call('HGET', KEYS[1], 'status')
  local finished = redis.call('HGET', KEYS[1], 'finishedAt')
  return cjson.encode({ applied = applied, released = released, skipped = skipped,
    settled = finished ~= false and finished ~= nil, missionStatus = status, taskStatus = t.status,
    attempts = t.attempts })
end
local stale = t.attempts ~= attempt or terminal(t.status)
  or (action ~= 'answer' and t.status == 'needs_input')
  or (action == 'answer' and t.status ~= 'needs_input')
if stale then
  local released = t.released or {}
  if t.status ~= 'completed' then released = {} end
  return result(false, released, {})
end
for k, v in pairs(patch) do t[k] = v end
t.finishedAt = nil
local released, skipped = {}, {}
if action == 'approve' then
  t.status = 'completed'
  t.finishedAt = now
  local node = cjson.decode(redis.call('HGET', KEYS[3], taskId))
  put(taskId, t)
  for _, d in ipairs(node.dependents) do
    local dt = get(d)
    if dt and dt.status == 'pending' then
      local dnode = cjson.decode(redis.call('HGET', KEYS[3], d))
      local ready = true
      for _, dep in ipairs(dnode.deps) do
        local depState = get(dep)
        if not depState or depState.status ~= 'completed' then ready = false break end
      end
      if ready then
        dt.status = 'queued'
        dt.attempts = 1
        put(d, dt)
        table.insert(released, d)
      end
    end
  end
  t.released = released
elseif action == 'retry' then
  t.status = 'retrying'
  t.attempts = attempt + 1
elseif action == 'fail' or action == 'cancel' then
  t.status = (action == 'fail') and 'failed' or 'cancelled'
  t.finishedAt = now
  local queue = { taskId }
  local seen = { [taskId] = true }
  while #queue > 0 do
    local current = table.remove(queue, 1)
    local node = cjson.decode(redis.call('HGET', KEYS[3], current))
    for _, d in ipairs(node.dependents) do
      if not seen[d] then
        seen[d] = true
        local dt = get(d)
        if dt and dt.status == 'pending' then
          dt.status = (action == 'fail') and 'skipped' or 'cancelled'
          dt.error = (action == 'fail') and ('dependency ' .. taskId .. ' failed') or 'mission cancelled'
          dt.finishedAt = now
          put(d, dt)
          table.insert(skipped, d)
        end
        table.insert(queue, d)
      end
    end
  end
elseif action == 'pause' then
  t.status = 'needs_input'
elseif action == 'answer' then
  t.status = 'queued'
  t.attempts = attempt + 1
end
put(taskId, t)
settle(now)
return result(true, released, skipped)
`;

/**
 * Cancels a mission: every task that has not started is cancelled now; running ones are
 * cancelled by their gates once their CLIs are killed.
 * KEYS: meta, tasks. ARGV: now. Returns JSON { cancelled: string[], running: string[], settled }.
 */
export const CANCEL_SCRIPT = `${COMMON}
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return cjson.encode({ error = 'unknown mission' }) end
if status ~= 'running' then return cjson.encode({ cancelled = {}, running = {}, settled = true, status = status }) end
redis.call('HSET', KEYS[1], 'cancelled', '1')
local all = redis.call('HGETALL', KEYS[2])
local cancelled, running = {}, {}
for i = 1, #all, 2 do
  local t = cjson.decode(all[i + 1])
  if t.status == 'pending' or t.status == 'queued' or t.status == 'retrying' or t.status == 'needs_input' then
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
return cjson.encode({ cancelled = cancelled, running = running, settled = settled == 1,
  status = redis.call('HGET', KEYS[1], 'status') })
`;
