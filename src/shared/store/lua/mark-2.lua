-- Moves a task through running/verifying/reviewing (or, with an empty status, only patches its
-- fields), only for the attempt that is current and not finished: a stale or duplicated job
-- cannot rewind a task.
-- KEYS: 1 meta, 2 tasks.
-- ARGV: 1 taskId, 2 attempt, 3 status ('' = patch only), 4 patch JSON.
-- Returns 1 when applied, 0 when the attempt is not the task's current one.
local t = get(ARGV[1])
if not t then return 0 end
if t.attempts ~= tonumber(ARGV[2]) or terminal(t.status) or t.status == 'needs_input' then return 0 end
if ARGV[3] ~= '' then t.status = ARGV[3] end
local patch = cjson.decode(ARGV[4])
for k, v in pairs(patch) do t[k] = v end
put(ARGV[1], t)
return 1
