-- KEYS[1] meta hash, KEYS[2] audit list.
-- ARGV[1] the entry as canonical JSON, ARGV[2] its content hash, ARGV[3] the mission's genesis hash.
-- Returns the entry's number in the chain.
return appendAudit(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
