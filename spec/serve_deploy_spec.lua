-- The deployment examples of docs/deploy.md cannot rot: the Kubernetes
-- manifest docs/k8s/oar-serve.yaml is the page's yaml block; it parses
-- (a YAML subset reader below: block mappings and sequences, flow
-- sequences, scalars) into a Deployment whose liveness and readiness probes
-- name /v2/health/live and /v2/health/ready on the container port the
-- server's --port gives, and a Service that selects the pods and targets
-- that port; every flag of the manifest's args and of the systemd unit's
-- ExecStart is one `oar-serve --help` lists; and a server started with the
-- manifest's arguments (on loopback, any free port, a small model) answers
-- both probe paths with 200.
local F = require("spec.helpers.files")
local S = require("spec.helpers.serve")

local function scalar(s)
  if s == "" then return nil end
  local quoted = s:match('^"(.*)"$') or s:match("^'(.*)'$")
  if quoted then return quoted end
  if s == "true" then return true elseif s == "false" then return false end
  return tonumber(s) or s
end

local function flow_list(s)
  local inner = assert(s:match("^%[(.*)%]$"), "not a flow sequence: " .. s)
  local out = {}
  for item in (inner .. ","):gmatch("%s*(.-)%s*,") do
    if item ~= "" then out[#out + 1] = scalar(item) end
  end
  return out
end

local function value(s)
  if s:sub(1, 1) == "[" then return flow_list(s) end
  return scalar(s)
end

-- lines: {indent=, text=}; parses the block at lines[i] of that indent
local parse_block
local function parse_list(lines, i, indent)
  local out = {}
  while lines[i] and lines[i].indent == indent and lines[i].text:match("^%-") do
    local rest = lines[i].text:match("^%-%s*(.*)$")
    if rest == "" then
      out[#out + 1], i = parse_block(lines, i + 1, lines[i + 1].indent)
    elseif rest:match("^[^%s\"'%[][^:]*:%s") or rest:match("^[^%s\"'%[][^:]*:$") then
      -- "- key: value": a mapping whose first line sits two columns in
      lines[i] = { indent = indent + 2, text = rest }
      out[#out + 1], i = parse_block(lines, i, indent + 2)
    else
      out[#out + 1], i = value(rest), i + 1
    end
  end
  return out, i
end

function parse_block(lines, i, indent)
  if lines[i].text:match("^%-") then return parse_list(lines, i, indent) end
  local out = {}
  while lines[i] and lines[i].indent == indent and not lines[i].text:match("^%-") do
    local key, rest = lines[i].text:match("^([^:]+):%s*(.*)$")
    assert(key, "not a 'key: value' line: " .. lines[i].text)
    assert(out[key] == nil, "key " .. key .. " twice")
    if rest ~= "" then
      out[key], i = value(rest), i + 1
    else
      local nxt = lines[i + 1]
      assert(nxt and (nxt.indent > indent or (nxt.indent == indent and nxt.text:match("^%-"))), key .. " has no value")
      out[key], i = parse_block(lines, i + 1, nxt.indent)
    end
  end
  return out, i
end

-- the documents of a YAML text
local function parse_yaml(text)
  local docs, lines = {}, {}
  local function flush()
    if #lines > 0 then
      local doc, i = parse_block(lines, 1, lines[1].indent)
      assert(i == #lines + 1, "left over at: " .. (lines[i] and lines[i].text or "?"))
      docs[#docs + 1] = doc
    end
    lines = {}
  end
  local pending
  for raw in (text .. "\n"):gmatch("(.-)\n") do
    assert(not raw:find("\t"), "a tab in YAML: " .. raw)
    local line = raw:gsub("%s+#.*$", ""):gsub("^%s*#.*$", "")
    if pending then
      pending.text = pending.text .. " " .. line:match("^%s*(.-)%s*$")
      line = ""
    elseif line:match("^%-%-%-") then
      flush()
      line = ""
    elseif line:match("%S") then
      pending = { indent = #line:match("^( *)"), text = line:match("^%s*(.-)%s*$") }
    end
    if pending then
      local _, open = pending.text:gsub("%[", "")
      local _, close = pending.text:gsub("%]", "")
      if open == close then lines[#lines + 1] = pending; pending = nil end
    end
  end
  assert(not pending, "an unclosed [ in YAML")
  flush()
  return docs
end

local function flags_of(args)
  local out = {}
  for _, a in ipairs(args) do if tostring(a):match("^%-%-") then out[#out + 1] = a end end
  return out
end

local function arg_after(args, flag)
  for i, a in ipairs(args) do if a == flag then return args[i + 1] end end
end

describe("docs/deploy.md's deployment examples", function()
  local page = F.read_bytes("docs/deploy.md")
  local manifest = F.read_bytes("docs/k8s/oar-serve.yaml")
  local code, help = S.sh("build/oar-serve --help")

  it("the YAML reader here reads what it should, and refuses what it cannot", function()
    local d = parse_yaml("a: 1\nb:\n  - x: \"8\"\n    y: [p, \"q r\", 3]\n  - z\nc:\n- 2\n---\nk: v\n")
    assert.same({ { a = 1, b = { { x = "8", y = { "p", "q r", 3 } }, "z" }, c = { 2 } }, { k = "v" } }, d)
    assert.has_error(function() parse_yaml("a: 1\n  b: 2\n") end)
    assert.has_error(function() parse_yaml("a: [1, 2\n") end)
    assert.has_error(function() parse_yaml("a:\n\tb: 1\n") end)
  end)

  it("docs/k8s/oar-serve.yaml is the page's manifest: a Deployment with both probes on the server's port, and its Service", function()
    local block = page:match("```yaml\n(.-)```")
    assert.is_string(block, "docs/deploy.md has no yaml block")
    assert.equal(block, manifest:gsub("^#[^\n]*\n", ""):gsub("^#[^\n]*\n", ""))
    local docs = parse_yaml(manifest)
    assert.equal(2, #docs)
    local dep, svc = docs[1], docs[2]
    assert.equal("Deployment", dep.kind)
    assert.equal("apps/v1", dep.apiVersion)
    assert.equal("Service", svc.kind)
    local pod = dep.spec.template
    assert.same(dep.spec.selector.matchLabels, pod.metadata.labels)
    local c = pod.spec.containers[1]
    assert.matches("oar%-serve$", c.command[1])
    local port = tonumber(arg_after(c.args, "--port"))
    assert.equal("0.0.0.0", arg_after(c.args, "--host"))
    local named
    for _, p in ipairs(c.ports) do if p.containerPort == port then named = p.name end end
    assert.is_string(named, "no containerPort " .. tostring(port))
    assert.equal("/v2/health/live", c.livenessProbe.httpGet.path)
    assert.equal("/v2/health/ready", c.readinessProbe.httpGet.path)
    for _, probe in ipairs({ c.livenessProbe, c.readinessProbe }) do
      assert.is_true(probe.httpGet.port == named or probe.httpGet.port == port)
    end
    -- the drain (30 s) fits in the grace period, after the preStop sleep
    local sleep = tonumber(c.lifecycle.preStop.exec.command[2])
    assert.is_true(pod.spec.terminationGracePeriodSeconds >= 30 + sleep)
    for k, v in pairs(svc.spec.selector) do assert.equal(v, pod.metadata.labels[k]) end
    assert.is_true(svc.spec.ports[1].targetPort == named or svc.spec.ports[1].targetPort == port)
    -- the mount holds the model path the args give
    assert.equal(1, (c.args[1]:find(c.volumeMounts[1].mountPath .. "/", 1, true)))
  end)

  it("every flag of the manifest and of the systemd unit is one oar-serve takes", function()
    assert.equal(0, code, help)
    local c = parse_yaml(manifest)[1].spec.template.spec.containers[1]
    local unit = page:match("```ini\n(.-)```")
    assert.is_string(unit, "docs/deploy.md has no ini block")
    local exec = unit:match("\nExecStart=(%S+)%s+([^\n]*)")
    assert.matches("oar%-serve$", exec)
    local unit_args = {}
    for a in unit:match("\nExecStart=%S+%s+([^\n]*)"):gmatch("%S+") do unit_args[#unit_args + 1] = a end
    local flags = flags_of(c.args)
    for _, f in ipairs(flags_of(unit_args)) do flags[#flags + 1] = f end
    assert.is_true(#flags >= 10)
    for _, f in ipairs(flags) do
      assert.is_truthy(help:find("  " .. f .. " ", 1, true), f .. " is not in oar-serve --help:\n" .. help)
    end
  end)

  it("a server started with the manifest's arguments answers both probes", function()
    local dir = F.tmpdir()
    assert(os.execute("mkdir -p '" .. dir .. "'") == 0)
    local srv
    local ok, err = pcall(function()
      S.save_mlp(dir .. "/mlp", 4, { 6 }, 3)
      local c = parse_yaml(manifest)[1].spec.template.spec.containers[1]
      local args = {}
      for i = 2, #c.args do
        local a = c.args[i]
        if c.args[i - 1] == "--port" then a = "0" elseif c.args[i - 1] == "--host" then a = "127.0.0.1" end
        args[#args + 1] = S.sh_quote(a)
      end
      -- S.start appends its own --host/--port; the later ones win, and they are the same
      srv = S.start(dir, dir .. "/mlp", table.concat(args, " "))
      local p = c.livenessProbe.httpGet.path
      assert.equal(200, (S.http(srv.port, "GET", p)))
      assert.equal(200, (S.http(srv.port, "GET", c.readinessProbe.httpGet.path)))
      local status, body = S.http(srv.port, "POST", "/v2/models/mlp/infer",
        '{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}')
      assert.equal(200, status, body)
      -- --access-log -: the lines go to stdout (the pod's log)
      local logged
      for _ = 1, 20 do
        logged = S.read_file(srv.log):find(" POST /v2/models/mlp/infer 200 ", 1, true)
        if logged then break end
        S.sleep(0.1)
      end
      assert.is_truthy(logged, S.read_file(srv.log))
      assert.matches(" GET " .. p .. " 200 ", S.read_file(srv.log), 1, true)
    end)
    S.stop(srv)
    F.rmtree(dir)
    assert(ok, err)
  end)
end)
