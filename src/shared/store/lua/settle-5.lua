-- The gate's transition, exactly once per attempt. A replay (the gate job delivered twice) is
-- not applied again but returns what the first run released, so the caller can re-add the same
-- flows idempotently. Approval releases each dependent whose dependencies are all completed;
-- failure and cancel mark every transitive pending dependent.
-- The gate's audit entry is appended in the same step (audit-append.lua), so a host that dies right
-- after the transition cannot leave it out of the trail, and the gate spends no round trip on it.
-- KEYS: 1 meta, 2 tasks, 3 graph (task id -> { deps, dependents } JSON), 4 audit list, 5 audit index.
-- An attempt held for a person (hold: awaiting_approval) moves on only by a transition whose patch
-- carries the person's verdict (`approval`), and such a transition applies to nothing else: a
-- replayed gate cannot merge what waits for a person, nor a late verdict an attempt that went on.
-- ARGV: 1 taskId, 2 attempt, 3 action (approve|retry|fail|skip|cancel|pause|hold|answer), 4 patch JSON, 5 now,
--       6 audit entry as canonical JSON ('' for none), 7 its content hash, 8 the mission's genesis hash.
-- Returns { code, applied, settled, missionStatus, taskStatus, attempts, released[], skipped[] };
-- code 0 = ok, -1 = unknown task (LUA_CODES in scripts.ts).
local taskId, attempt, action = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local patch = cjson.decode(ARGV[4])
local now = ARGV[5]
local t = get(taskId)
if not t then return { -1 } end
local function result(applied, released, skipped)
  local status = redis.call('HGET', KEYS[1], 'status')
  local finished = redis.call('HGET', KEYS[1], 'finishedAt')
  return { 0, applied and 1 or 0, finished and 1 or 0, status, t.status, t.attempts, released, skipped }
end
local stale = t.attempts ~= attempt or terminal(t.status)
  or (action ~= 'answer' and t.status == 'needs_input')
  or (action == 'answer' and t.status ~= 'needs_input')
  or ((t.status == 'awaiting_approval') ~= (patch.approval ~= nil))
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
elseif action == 'fail' or action == 'skip' or action == 'cancel' then
  if action == 'fail' then t.status = 'failed'
  elseif action == 'skip' then t.status = 'skipped'
  else t.status = 'cancelled' end
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
          if action == 'cancel' then
            dt.status = 'cancelled'
            dt.error = 'mission cancelled'
          else
            dt.status = 'skipped'
            dt.error = 'dependency ' .. taskId .. ((action == 'fail') and ' failed' or ' skipped')
          end
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
elseif action == 'hold' then
  t.status = 'awaiting_approval'
elseif action == 'answer' then
  t.status = 'queued'
  t.attempts = attempt + 1
end
put(taskId, t)
if ARGV[6] ~= '' then appendAudit(KEYS[1], KEYS[4], KEYS[5], taskId, ARGV[6], ARGV[7], ARGV[8]) end
settle(now)
return result(true, released, skipped)
