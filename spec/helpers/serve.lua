-- spec/helpers/serve.lua — what the `oar serve` specs share: a server
-- started on 127.0.0.1 at a port it picks (--port 0, read from its first
-- line) and killed by the spec whatever happened, curl requests (every one
-- bounded in time), and small models saved by oar.io.save_inference_model.
--
--   local S = require("spec.helpers.serve")
--   local srv = S.start(dir, dir .. "/mlp", "--threads 2")   -- waits for ready
--   local status, body = S.http(srv.port, "POST", "/v2/models/mlp/infer", json_text)
--   S.stop(srv)                                              -- kill -9 if alive
local oar = require("oar")
local layers = oar.layers

local M = {}
M.OAR = "build/oar"

function M.sh_quote(s)
  assert(not tostring(s):find("'", 1, true))
  return "'" .. s .. "'"
end

-- runs cmd in sh: exit status, output (stdout and stderr)
function M.sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"exit $?\""))
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("exit (%d+)\n?$"))
  return code, (out:gsub("exit %d+\n?$", ""))
end

function M.sleep(s) os.execute("sleep " .. s) end

function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end

function M.write_file(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

function M.flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do M.flatten(v, out) end
  return out
end

-- One HTTP request with curl (opts.timeout s, default 10): status, body,
-- response headers (lower-case names). opts.headers: extra header lines.
function M.http(port, method, path, body, opts)
  opts = opts or {}
  local tmp = os.tmpname()
  local args = { "curl -s -m " .. (opts.timeout or 10) .. " -o " .. M.sh_quote(tmp .. ".out") .. " -D " ..
    M.sh_quote(tmp .. ".hdr") .. " -w '%{http_code}' -X", method }
  for _, h in ipairs(opts.headers or {}) do args[#args + 1] = "-H " .. M.sh_quote(h) end
  if body then
    M.write_file(tmp, body)
    args[#args + 1] = "-H 'Content-Type: application/json' --data-binary @" .. M.sh_quote(tmp)
  end
  args[#args + 1] = M.sh_quote("http://127.0.0.1:" .. port .. path)
  local _, out = M.sh(table.concat(args, " "))
  local resp, headers = M.read_file(tmp .. ".out"), {}
  for name, value in M.read_file(tmp .. ".hdr"):gmatch("([%w%-]+):%s*([^\r\n]*)") do headers[name:lower()] = value end
  os.remove(tmp); os.remove(tmp .. ".out"); os.remove(tmp .. ".hdr")
  return tonumber(out:match("(%d+)$")), resp, headers
end

local json = require("dkjson")
function M.decode(text)
  local v, _, err = json.decode(text)
  assert(v, "not JSON (" .. tostring(err) .. "): " .. tostring(text))
  return v
end

-- Starts `oar serve model opts` with its output in dir/server-N.log (N
-- counts the starts); returns the server ({pid, port, log}) once
-- /v2/health/ready answers.
local starts = 0
function M.start(dir, model, opts)
  starts = starts + 1
  local log = dir .. "/server-" .. starts .. ".log"
  local p = assert(io.popen(M.OAR .. " serve " .. M.sh_quote(model) .. " --host 127.0.0.1 --port 0 " .. (opts or "") ..
    " > " .. M.sh_quote(log) .. " 2>&1 & echo $!"))
  local srv = { pid = tonumber(p:read("*l")), log = log }
  p:close()
  for _ = 1, 150 do   -- 15 s
    srv.port = M.read_file(log):match("on http://127%.0%.0%.1:(%d+)")
    if srv.port then break end
    M.sleep(0.1)
  end
  if not srv.port then M.stop(srv); error("the server did not start: " .. M.read_file(log)) end
  for _ = 1, 50 do
    if M.http(srv.port, "GET", "/v2/health/ready") == 200 then return srv end
    M.sleep(0.1)
  end
  M.stop(srv)
  error("the server never became ready: " .. M.read_file(log))
end

function M.alive(srv) return srv and srv.pid and os.execute("kill -0 " .. srv.pid .. " 2>/dev/null") == 0 end

function M.stop(srv)
  if M.alive(srv) then os.execute("kill -9 " .. srv.pid .. " 2>/dev/null") end
end

-- An MLP x[-1, width] -> fc(hidden, relu)... -> fc(classes, softmax), saved to dir.
function M.save_mlp(dir, width, hidden, classes, seed)
  local main, startup = oar.Program(), oar.Program()
  local out
  oar.program_guard(main, startup, function()
    local h = layers.data{ name = "x", shape = { width } }
    for _, size in ipairs(hidden) do h = layers.fc{ input = h, size = size, act = "relu" } end
    out = layers.fc{ input = h, size = classes, act = "softmax" }
  end)
  local exe, scope = oar.Executor(), oar.Scope()
  oar.seed(seed or 3)
  exe:run(startup, { scope = scope })
  oar.io.save_inference_model(dir, { "x" }, { out }, exe, main, { scope = scope })
end

-- the value of a counter or histogram line of /metrics text
function M.metric(text, series)
  local i, j = ("\n" .. text):find("\n" .. series .. " ", 1, true)
  assert(i, series .. " is not in /metrics:\n" .. text)
  return tonumber(text:match("^(%S+)", j))
end

return M
