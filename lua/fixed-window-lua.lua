-- fixed-window-lua: one counter per window; the caller names the window's key
-- (declared in KEYS). The same logic as fixed-window-multi, in a script.
-- KEYS[1] the window's counter  ARGV[1] limit  ARGV[2] window ms  ARGV[3] cost
-- returns {admitted 0|1, remaining, -1}
local limit = tonumber(ARGV[1])
local count = redis.call('INCRBY', KEYS[1], tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
local admitted = 0
if count <= limit then admitted = 1 end
return {admitted, math.max(0, limit - count), -1}
