-- KEYS[1] meta hash, KEYS[2] audit list, KEYS[3] audit index (hash: taskId -> comma-separated positions).
-- ARGV[1] the entry's task id, ARGV[2] the entry as canonical JSON, ARGV[3] its content hash,
-- ARGV[4] the mission's genesis hash. Returns the entry's number in the chain.
return appendAudit(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
