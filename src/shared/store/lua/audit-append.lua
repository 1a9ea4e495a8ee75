-- Appends one entry to a mission's audit trail with its chain link (src/shared/audit-chain.ts has
-- the rule). The entry arrives as canonical JSON with its content hash, computed by the caller:
-- hashing a prompt of 100 kB in Lua would hold Redis for every other client, and the verifier
-- recomputes it anyway. The link is spliced into the JSON text, not re-encoded, because cjson
-- would turn the entry's empty lists into `{}`. The entry's position is recorded under its task in
-- the same step, so the index never points past the list or misses an entry: the board reads one
-- task's trail by position instead of the whole list, which is tens of megabytes for a 10,000-task
-- mission. Returns the entry's number in the chain.
local function appendAudit(metaKey, auditKey, indexKey, taskId, entryJson, contentHash, genesis)
  local prev = redis.call('HGET', metaKey, 'auditHead') or genesis
  local n = redis.call('HINCRBY', metaKey, 'auditCount', 1)
  local hash = sha256(prev .. contentHash)
  local link = '"chain":{"content":"' .. contentHash .. '","hash":"' .. hash .. '","n":' .. n
    .. ',"prev":"' .. prev .. '"}'
  local row
  if entryJson == '{}' then row = '{' .. link .. '}'
  else row = string.sub(entryJson, 1, -2) .. ',' .. link .. '}' end
  local at = tostring(redis.call('RPUSH', auditKey, row) - 1)
  local known = redis.call('HGET', indexKey, taskId)
  if known then at = known .. ',' .. at end
  redis.call('HSET', indexKey, taskId, at)
  redis.call('HSET', metaKey, 'auditHead', hash)
  return n
end
