-- Appends one entry to a mission's audit trail with its chain link (src/shared/audit-chain.ts has
-- the rule). The entry arrives as canonical JSON with its content hash, computed by the caller:
-- hashing a prompt of 100 kB in Lua would hold Redis for every other client, and the verifier
-- recomputes it anyway. The link is spliced into the JSON text, not re-encoded, because cjson
-- would turn the entry's empty lists into `{}`. Returns the entry's number in the chain.
local function appendAudit(metaKey, auditKey, entryJson, contentHash, genesis)
  local prev = redis.call('HGET', metaKey, 'auditHead') or genesis
  local n = redis.call('HINCRBY', metaKey, 'auditCount', 1)
  local hash = sha256(prev .. contentHash)
  local link = '"chain":{"content":"' .. contentHash .. '","hash":"' .. hash .. '","n":' .. n
    .. ',"prev":"' .. prev .. '"}'
  local row
  if entryJson == '{}' then row = '{' .. link .. '}'
  else row = string.sub(entryJson, 1, -2) .. ',' .. link .. '}' end
  redis.call('RPUSH', auditKey, row)
  redis.call('HSET', metaKey, 'auditHead', hash)
  return n
end
