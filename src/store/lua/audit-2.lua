-- Appends an audit entry and records its position under its task in one step, so the index
-- never points past the list or misses an entry: the board reads one task's trail by position
-- instead of the whole list, which is tens of megabytes for a 10,000-task mission.
-- KEYS: 1 audit (list), 2 audit index (hash: taskId -> comma-separated positions).
-- ARGV: 1 taskId, 2 entry JSON.
-- Returns the entry's position in the list.
local n = redis.call('RPUSH', KEYS[1], ARGV[2])
local at = tostring(n - 1)
local known = redis.call('HGET', KEYS[2], ARGV[1])
if known then at = known .. ',' .. at end
redis.call('HSET', KEYS[2], ARGV[1], at)
return n - 1
