-- Test hook for sha256.lua: ARGV[1] a text. Returns its SHA-256 as hex.
return sha256(ARGV[1])
