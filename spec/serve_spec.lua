-- `oar serve` (src/serve/*.c): the Open Inference Protocol over HTTP on
-- loopback. A small MLP (and an int64-input embedding model) saved by
-- oar.io.save_inference_model are served on 127.0.0.1 at a port the server
-- picks (--port 0, read from its first line); curl talks to it. Inference
-- results equal exe:run on the program load_inference_model returns; every
-- bad request gets a 4xx with a JSON error and the server keeps serving;
-- /metrics counts the requests; SIGTERM drains and exits 0. Every wait is
-- bounded, and the server is killed in after_each whatever happened.
local oar = require("oar")
local layers = oar.layers
local json = require("dkjson")
local F = require("spec.helpers.files")
local S = require("spec.helpers.serve")

local OAR, sh_quote, sh, read_file, flatten, decode = S.OAR, S.sh_quote, S.sh, S.read_file, S.flatten, S.decode

-- one HTTP request with curl: status, body; extra: request header lines
local function http(port, method, path, body, extra)
  local status, text = S.http(port, method, path, body, { timeout = 5, headers = extra })
  return status, text
end

local function save_mlp(dir) S.save_mlp(dir, 4, { 6 }, 3) end

local function save_embedding(dir)
  local main, startup = oar.Program(), oar.Program()
  local out
  oar.program_guard(main, startup, function()
    local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
    out = layers.embedding{ input = ids, size = { 10, 3 } }
  end)
  local exe, scope = oar.Executor(), oar.Scope()
  oar.seed(4)
  exe:run(startup, { scope = scope })
  oar.io.save_inference_model(dir, { "ids" }, { out }, exe, main, { scope = scope })
end

-- what the static executor computes on the saved model (the reference)
local function reference(dir, feed)
  local exe, scope = oar.Executor(), oar.Scope()
  local prog, _, fetches = oar.io.load_inference_model(dir, exe, { scope = scope })
  local t = exe:run(prog, { feed = feed, fetch_list = fetches, scope = scope })[1]
  return flatten(t:totable()), t:shape()
end

describe("oar serve", function()
  local dir, server

  -- starts the server on `model`; returns its port once /v2/health/ready answers
  local function start(model, opts)
    server = S.start(dir, model, opts)
    return server.port
  end

  local function alive() return S.alive(server) end

  setup(function()
    local code, out = sh("test -x build/oar-serve")
    assert.equal(0, code, "build/oar-serve is not built (libmicrohttpd-dev missing?) " .. out)
  end)
  before_each(function()
    dir = F.tmpdir()
    assert(os.execute("mkdir -p " .. sh_quote(dir)) == 0)
  end)
  after_each(function()
    S.stop(server)
    server = nil
    F.rmtree(dir)
  end)

  it("serves metadata and inferences equal to the static executor's, and counts them", function()
    save_mlp(dir .. "/mlp")
    local port = start(dir .. "/mlp")

    local status, body = http(port, "GET", "/v2/health/live")
    assert.equal(200, status, body)
    assert.is_true(decode(body).live)

    status, body = http(port, "GET", "/v2/models/mlp")
    assert.equal(200, status, body)
    local meta = decode(body)
    assert.equal("mlp", meta.name)
    assert.equal("oar", meta.platform)
    assert.same({ "1" }, meta.versions)
    assert.same({ { name = "x", datatype = "FP32", shape = { -1, 4 } } }, meta.inputs)
    assert.equal(1, #meta.outputs)
    assert.equal("FP32", meta.outputs[1].datatype)
    assert.same({ -1, 3 }, meta.outputs[1].shape)

    status, body = http(port, "GET", "/v2/models/mlp/ready")
    assert.equal(200, status, body)
    assert.is_true(decode(body).ready)

    local rows = { { 1, 2, 3, 4 }, { 0.5, -1, 0, 2 }, { -3, 0.25, 1.5, -0.75 } }
    local want, want_shape = reference(dir .. "/mlp", { x = rows })
    status, body = http(port, "POST", "/v2/models/mlp/infer", json.encode({
      inputs = { { name = "x", shape = { 3, 4 }, datatype = "FP32", data = flatten(rows) } },
      outputs = { { name = meta.outputs[1].name } } }))
    assert.equal(200, status, body)
    local resp = decode(body)
    assert.equal("mlp", resp.model_name)
    local out = resp.outputs[1]
    assert.equal(meta.outputs[1].name, out.name)
    assert.equal("FP32", out.datatype)
    assert.same(want_shape, out.shape)
    assert.equal(#want, #out.data)
    for i = 1, #want do
      assert.is_true(math.abs(out.data[i] - want[i]) <= 1e-6, ("output %d: served %g, exe:run %g"):format(i, out.data[i], want[i]))
    end

    status, body = http(port, "GET", "/metrics")
    assert.equal(200, status, body)
    assert.matches('oar_serve_requests_total{endpoint="infer",status="200"} 1\n', body, 1, true)
    assert.matches('oar_serve_requests_total{endpoint="model_metadata",status="200"} 1\n', body, 1, true)
    assert.matches('oar_serve_requests_total{endpoint="model_ready",status="200"} 1\n', body, 1, true)
    assert.matches("oar_serve_inferences_total 1\n", body, 1, true)
    assert.matches("oar_serve_inference_seconds_count 1\n", body, 1, true)
    assert.matches('oar_serve_inference_seconds_bucket{le="+Inf"} 1\n', body, 1, true)
  end)

  it("takes int64 inputs (an embedding model) with --name and --threads", function()
    save_embedding(dir .. "/emb")
    local port = start(dir .. "/emb", "--name ids2vec --threads 2")
    local status, body = http(port, "GET", "/v2/models/ids2vec")
    assert.equal(200, status, body)
    assert.same({ { name = "ids", datatype = "INT64", shape = { -1, 1 } } }, decode(body).inputs)
    local ids = { { 7 }, { 0 }, { 3 }, { 7 } }
    local want, want_shape = reference(dir .. "/emb", { ids = oar.Tensor(ids, "int64") })
    status, body = http(port, "POST", "/v2/models/ids2vec/infer", json.encode({
      inputs = { { name = "ids", shape = { 4, 1 }, datatype = "INT64", data = { 7, 0, 3, 7 } } } }))
    assert.equal(200, status, body)
    local out = decode(body).outputs[1]
    assert.same(want_shape, out.shape)
    for i = 1, #want do assert.is_true(math.abs(out.data[i] - want[i]) <= 1e-6) end
    -- float ids are the wrong datatype; ids out of the table are the model's error
    status, body = http(port, "POST", "/v2/models/ids2vec/infer", json.encode({
      inputs = { { name = "ids", shape = { 1, 1 }, datatype = "FP32", data = { 1 } } } }))
    assert.equal(400, status, body)
    assert.matches("datatype FP32, but the model takes INT64", decode(body).error, 1, true)
    status, body = http(port, "POST", "/v2/models/ids2vec/infer", json.encode({
      inputs = { { name = "ids", shape = { 1, 1 }, datatype = "INT64", data = { 99 } } } }))
    assert.is_true(status >= 400 and status < 600, body)
    assert.is_string(decode(body).error)
    assert.equal(200, (http(port, "GET", "/v2/health/live")))
  end)

  it("answers every bad request with a 4xx and a JSON error, and keeps serving", function()
    save_mlp(dir .. "/mlp")
    local port = start(dir .. "/mlp", "--max-body 4096")
    local good = json.encode({ inputs = { { name = "x", shape = { 1, 4 }, datatype = "FP32", data = { 1, 2, 3, 4 } } } })
    local cases = {
      { "GET", "/v2/models/other", nil, 404, "unknown model 'other'" },
      { "POST", "/v2/models/other/infer", good, 404, "unknown model 'other'" },
      { "GET", "/v2/nothing/here", nil, 404, "no endpoint" },
      { "GET", "/v2/models/mlp/infer", nil, 405, "infer takes POST" },
      { "POST", "/v2/models/mlp/infer", '{"inputs": [', 400, "bad JSON" },
      { "POST", "/v2/models/mlp/infer", "", 400, "bad JSON" },
      { "POST", "/v2/models/mlp/infer", "[1, 2]", 400, "not a JSON object" },
      { "POST", "/v2/models/mlp/infer", '{"inputs": []}', 400, "missing input 'x'" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "y", shape = { 1, 4 }, datatype = "FP32",
        data = { 1, 2, 3, 4 } } } }), 400, "'y' is not an input" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, 3 }, datatype = "FP32",
        data = { 1, 2, 3 } } } }), 400, "shape [1, 3] does not fit the model's [-1, 4]" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, 4 }, datatype = "FP32",
        data = { 1, 2, 3 } } } }), 400, "data has 3 elements but shape holds 4" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, 4 }, datatype = "INT32",
        data = { 1, 2, 3, 4 } } } }), 400, "datatype INT32, but the model takes FP32" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, 4 }, datatype = "FP16",
        data = { 1, 2, 3, 4 } } } }), 400, "datatype \"FP16\" is not one of" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, 4 }, datatype = "FP32",
        data = { 1, "two", 3, 4 } } } }), 400, "data[1] is not a number" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, -4 }, datatype = "FP32",
        data = { 1, 2, 3, 4 } } } }), 400, "shape[1] is not a non-negative integer" },
      { "POST", "/v2/models/mlp/infer", json.encode({ inputs = { { name = "x", shape = { 1, 4 }, datatype = "FP32",
        data = { 1, 2, 3, 4 } } }, outputs = { { name = "nope" } } }), 400, "'nope' is not an output" },
      { "POST", "/v2/models/mlp/infer", '{"inputs": [' .. string.rep("0.5, ", 1000) .. "0]}", 413, "too large" },
      { "POST", "/v2/models/mlp/infer", '{"inputs": [' .. string.rep("0.5, ", 1000) .. "0]}", 413, "too large",
        { "Transfer-Encoding: chunked" } },
    }
    for _, c in ipairs(cases) do
      local status, body = http(port, c[1], c[2], c[3], c[6])
      local what = c[1] .. " " .. c[2] .. " " .. tostring(c[3]):sub(1, 80)
      assert.equal(c[4], status, what .. ": " .. tostring(body))
      local err = decode(body).error
      assert.is_string(err, what)
      assert.matches(c[5], err, 1, true)
      assert.is_true(alive(), "the server died on " .. what)
    end
    local status, body = http(port, "POST", "/v2/models/mlp/infer", good)
    assert.equal(200, status, body)
    status, body = http(port, "GET", "/metrics")
    assert.equal(200, status)
    assert.matches('oar_serve_requests_total{endpoint="infer",status="400"} 12\n', body, 1, true)
    assert.matches('oar_serve_requests_total{endpoint="infer",status="413"} 2\n', body, 1, true)
    assert.matches('oar_serve_requests_total{endpoint="infer",status="404"} 1\n', body, 1, true)
    assert.matches('oar_serve_requests_total{endpoint="infer",status="200"} 1\n', body, 1, true)
    assert.matches("oar_serve_inferences_total 1\n", body, 1, true)
  end)

  it("drains and exits 0 on SIGTERM; refuses a missing model and bad flags", function()
    save_mlp(dir .. "/mlp")
    local port = start(dir .. "/mlp")
    assert.equal(200, (http(port, "GET", "/v2/health/live")))
    -- this server is no child of a shell here: poll for its exit (10 s);
    -- the exit status is checked on the next one
    local code, out = sh("kill -TERM " .. server.pid .. "; for i in $(seq 100); do kill -0 " .. server.pid ..
      " 2>/dev/null || break; sleep 0.1; done; kill -0 " .. server.pid .. " 2>/dev/null && echo still-running; true")
    assert.equal(0, code, out)
    assert.is_nil(out:find("still-running"), "not gone 10 s after SIGTERM: " .. read_file(server.log))
    assert.matches("SIGTERM: draining", read_file(server.log), 1, true)

    -- the exit status itself, from a shell whose child the server is (no
    -- `timeout` around it: timeout re-raises the SIGTERM it forwards); a
    -- server not gone within 10 s is killed, and fails the check
    code, out = sh(OAR .. " serve " .. sh_quote(dir .. "/mlp") .. " --port 0 > " ..
      sh_quote(dir .. "/exit.log") .. " 2>&1 & pid=$!; for i in $(seq 100); do grep -q 'on http' " ..
      sh_quote(dir .. "/exit.log") .. " && break; sleep 0.1; done; kill -TERM $pid; " ..
      "for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; " ..
      "kill -9 $pid 2>/dev/null; wait $pid")
    assert.equal(0, code, out .. read_file(dir .. "/exit.log"))

    code, out = sh("timeout 20 " .. OAR .. " serve " .. sh_quote(dir .. "/none") .. " --port 0")
    assert.equal(1, code)
    assert.matches("no such file or directory", out, 1, true)
    code, out = sh("timeout 20 " .. OAR .. " serve " .. sh_quote(dir .. "/mlp") .. " --threads zero")
    assert.equal(2, code)
    assert.matches("--threads wants an integer", out, 1, true)
  end)
end)
