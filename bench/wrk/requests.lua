-- wrk script: send METHOD PATH with each line of BODIES_FILE as the body, in turn, cycling.
-- Usage: wrk ... -s requests.lua URL -- METHOD PATH [BODIES_FILE]
-- done() prints one line "WRK_JSON {...}" that bench/loadgen.py parses.
local requests = {}
local index = 0

function init(args)
  local method, path, file = args[1], args[2], args[3]
  local headers = {["Content-Type"] = "application/json"}
  if file then
    for line in io.lines(file) do
      if #line > 0 then
        requests[#requests + 1] = wrk.format(method, path, headers, line)
      end
    end
  else
    requests[1] = wrk.format(method, path)
  end
  -- Threads start at different bodies so concurrent clients do not ask the same thing at once.
  index = math.random(#requests) - 1
end

function request()
  index = index % #requests + 1
  return requests[index]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"connect_errors":%d,"read_errors":%d,' ..
    '"write_errors":%d,"timeouts":%d,"status_errors":%d,"p50_us":%d,"p95_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
