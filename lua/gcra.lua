-- gcra: generic cell rate algorithm. One key holds the theoretical arrival
-- time (TAT, us). Each unit moves the TAT on by one emission interval
-- (1/rate); a request is admitted if the new TAT is no more than `burst`
-- intervals ahead of now. Redis's clock; a refusal writes nothing.
-- KEYS[1] tat  ARGV[1] burst  ARGV[2] rate/s  ARGV[3] cost
-- returns {admitted 0|1, remaining, redis time us}
local burst = tonumber(ARGV[1])
local interval_us = 1000000 / tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

local tat = tonumber(redis.call('GET', KEYS[1])) or now_us
if tat < now_us then tat = now_us end
local new_tat = tat + cost * interval_us
local ahead = new_tat - now_us
local allowance = burst * interval_us
if ahead > allowance then
  return {0, math.floor((allowance - (tat - now_us)) / interval_us), now_us}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.max(1, math.ceil(ahead / 1000)))
return {1, math.floor((allowance - ahead) / interval_us), now_us}
