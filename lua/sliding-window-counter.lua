-- sliding-window-counter: the count of the current fixed window plus the
-- previous window's count weighted by how much of it still overlaps the
-- sliding window. One hash: w (window index), cur, prev. Redis's clock.
-- KEYS[1] hash  ARGV[1] limit  ARGV[2] window ms  ARGV[3] cost
-- returns {admitted 0|1, remaining (floor), redis time us}
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now_ms = now_us / 1000
local window = math.floor(now_ms / window_ms)

local saved = redis.call('HMGET', KEYS[1], 'w', 'cur', 'prev')
local w = tonumber(saved[1])
local cur = tonumber(saved[2]) or 0
local prev = tonumber(saved[3]) or 0
if w == nil then
  cur, prev = 0, 0
elseif w == window - 1 then
  prev, cur = cur, 0
elseif w ~= window then
  cur, prev = 0, 0
end

local into = (now_ms - window * window_ms) / window_ms
local estimate = prev * (1 - into) + cur
local admitted = 0
if estimate + cost <= limit then
  cur = cur + cost
  estimate = estimate + cost
  admitted = 1
end
redis.call('HSET', KEYS[1], 'w', window, 'cur', cur, 'prev', prev)
redis.call('PEXPIRE', KEYS[1], 2 * window_ms)
return {admitted, math.floor(limit - estimate), now_us}
