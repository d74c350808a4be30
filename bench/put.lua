-- wrk script: fenced PUTs with rising tokens, one scope set per wrk thread so tokens never go backwards
-- within a scope (every request raises the fence: the journal is written for each one).
-- Tokens are the start second of this wrk run followed by a 7-digit counter, so they also rise from one run to
-- the next against the same proxy (a counter restarting at 1 would resend tokens the warm-up or an earlier run
-- had already raised: equal-token accepts that skip the journal, or stale 409s).
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  -- STALE=1: every request carries token 0 on scopes the run has already raised, so each one is refused (409):
  -- the stale-rejection path (the token cache with a networked store).
  stale = os.getenv("STALE") == "1"
  -- STEADY=1: a steady holder: one token for the whole run on 1 000 scopes, so after each scope's first write
  -- every request is an equal-token accept (no journal record), as a lease holder writing again sends.
  steady = os.getenv("STEADY") == "1"
  scopes = tonumber(os.getenv("SCOPES") or (steady and "1000" or "100000"))
  body = string.rep("x", tonumber(os.getenv("BODY_BYTES") or "256"))
  base = tostring(os.time())
end

function request()
  counter = counter + 1
  -- Scope numbers start at 1 (the write runs reach scope 0 only after `scopes` requests), so the stale run's
  -- scopes 1..SCOPES are all ones the write runs raised: no token 0 lands on a fresh scope as a 2xx.
  local path = "/docs/t" .. thread_id .. "-" .. (1 + (counter - 1) % scopes)
  local token = stale and "0" or steady and base .. "0000000" or base .. string.format("%07d", counter % 10000000)
  local headers = { ["Fencing-Token"] = token, ["Content-Type"] = "application/octet-stream" }
  return wrk.format("PUT", path, headers, body)
end

function done(summary, latency, requests)
  local non2xx = summary.errors.status
  io.write(string.format("BENCH rps=%.1f p50_ms=%.3f p99_ms=%.3f non2xx=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    non2xx, summary.requests))
end
