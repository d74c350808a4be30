-- wrk script for bench/postgres-wrk.sh: fenced PUTs of a balance on one of ROWS accounts, token 7 (a steady
-- holder: equal-token accepts), the same UPDATE pgbench runs directly.
local counter = 0
function init(args)
  rows = tonumber(os.getenv("ROWS") or "64")
end
function request()
  counter = counter + 1
  local id = math.random(0, rows - 1)
  local headers = { ["Fencing-Token"] = "7", ["Content-Type"] = "application/json" }
  return wrk.format("PUT", "/accounts/acc" .. id .. "/balance", headers, '{"balance": ' .. counter .. '}')
end
function done(summary, latency, requests)
  io.write(string.format("BENCH rps=%.1f p50_ms=%.3f p99_ms=%.3f non2xx=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.requests))
end
