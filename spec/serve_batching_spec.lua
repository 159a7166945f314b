-- `oar serve` beyond one request at a time (src/serve/sched.c, batch.c):
-- dynamic batching stacks concurrent requests into one run and gives each
-- the bits it gets alone (and, without batching, the values to float
-- rounding: a lone row takes oar's one-row kernels there); requests that do not stack, or a model whose
-- outputs do not split by rows, run alone; a request past its deadline
-- (--request-timeout-ms, parameters.timeout_ms) gets a 504 whether it
-- waits for a worker or runs, a running one is cancelled, and the server
-- keeps serving; --access-log writes one line per request; the binary
-- tensor data extension. Every wait is bounded; servers are killed in
-- after_each whatever happened.
local oar = require("oar")
local layers = oar.layers
local json = require("dkjson")
local F = require("spec.helpers.files")
local S = require("spec.helpers.serve")
local q = S.sh_quote

-- while (i < n) { i++; w x w }: ~n model runs' worth of work, cancellable between ops
local function save_loop(dir)
  local main, startup = oar.Program(), oar.Program()
  local i
  oar.program_guard(main, startup, function()
    local n = layers.data{ name = "n", shape = { 1 }, dtype = "int64", append_batch_size = false }
    i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
    local w = layers.fill_constant{ shape = { 256, 256 }, dtype = "float32", value = 0.001 }
    local cond = layers.less_than{ x = i, y = n }
    local loop = layers.While(cond)
    loop:block(function()
      layers.matmul(w, w)
      layers.increment{ x = i, value = 1, in_place = true }
      layers.less_than{ x = i, y = n, cond = cond }
    end)
  end)
  local exe, scope = oar.Executor(), oar.Scope()
  exe:run(startup, { scope = scope })
  oar.io.save_inference_model(dir, { "n" }, { i }, exe, main, { scope = scope })
end

-- x[-1, 4] -> the mean of everything: an output whose first dimension is not the batch's
local function save_mean(dir)
  local main, startup = oar.Program(), oar.Program()
  local out
  oar.program_guard(main, startup, function()
    out = layers.mean(layers.data{ name = "x", shape = { 4 } })
  end)
  local exe, scope = oar.Executor(), oar.Scope()
  exe:run(startup, { scope = scope })
  oar.io.save_inference_model(dir, { "x" }, { out }, exe, main, { scope = scope })
end

local function infer_body(name, rows, width, data, params)
  return json.encode({ inputs = { { name = name, shape = { rows, width }, datatype = "FP32", data = data } },
                       parameters = params })
end

-- sends bodies[i] to path all at once (one curl each, in the background):
-- statuses and bodies, in order
local function concurrently(dir, port, path, bodies)
  local script = {}
  for i, b in ipairs(bodies) do
    S.write_file(dir .. "/req" .. i, b)
    script[#script + 1] = ("curl -s -m 20 -o %s -w '%%{http_code}' -H 'Content-Type: application/json' " ..
      "--data-binary @%s %s > %s &"):format(q(dir .. "/resp" .. i), q(dir .. "/req" .. i),
      q("http://127.0.0.1:" .. port .. path), q(dir .. "/code" .. i))
  end
  script[#script + 1] = "wait"
  local code, out = S.sh(table.concat(script, "\n"))
  assert.equal(0, code, out)
  local statuses, resps = {}, {}
  for i = 1, #bodies do
    statuses[i] = tonumber(S.read_file(dir .. "/code" .. i))
    resps[i] = S.read_file(dir .. "/resp" .. i)
  end
  return statuses, resps
end

describe("oar serve: batching, deadlines, access log, binary data", function()
  local dir, servers

  local function start(model, opts)
    local srv = S.start(dir, model, opts)
    servers[#servers + 1] = srv
    return srv
  end

  setup(function()
    local code, out = S.sh("test -x build/oar-serve")
    assert.equal(0, code, "build/oar-serve is not built (libmicrohttpd-dev missing?) " .. out)
  end)
  before_each(function()
    dir = F.tmpdir()
    assert(os.execute("mkdir -p " .. q(dir)) == 0)
    servers = {}
  end)
  after_each(function()
    for _, srv in ipairs(servers) do S.stop(srv) end
    F.rmtree(dir)
  end)

  it("stacks concurrent requests into one run, each getting the bits it gets alone", function()
    -- 512 -> 256: wide enough that oar's kernels take another path for one
    -- row (a GEMV) than for several, with other rounding
    local W = 512
    S.save_mlp(dir .. "/mlp", W, { 256 }, 5)
    local bodies, nrows = {}, 0
    for r = 1, 24 do
      local rows = r % 5 == 0 and 3 or 1
      local data = {}
      for k = 1, rows * W do data[k] = math.sin(r * 1.37 + k * 0.71) * 2 end
      bodies[r] = infer_body("x", rows, W, data)
      nrows = nrows + rows
    end
    local function one_by_one(port)
      local outs = {}
      for r, b in ipairs(bodies) do
        local status, body = S.http(port, "POST", "/v2/models/mlp/infer", b)
        assert.equal(200, status, body)
        outs[r] = S.decode(body).outputs[1]
      end
      return outs
    end
    -- without batching, one request after the other
    local plain_srv = start(dir .. "/mlp", "--threads 1")
    local plain = one_by_one(plain_srv.port)
    S.stop(plain_srv)

    local log = dir .. "/access.log"
    local srv = start(dir .. "/mlp", "--threads 2 --max-batch 16 --batch-timeout-ms 300 --access-log " .. q(log))
    assert.matches("dynamic batching up to 16 rows, 300 ms", S.read_file(srv.log), 1, true)
    -- alone: each request on its own (one after the other), then all at once
    local alone = one_by_one(srv.port)
    local statuses, resps = concurrently(dir, srv.port, "/v2/models/mlp/infer", bodies)
    for r = 1, #bodies do
      assert.equal(200, statuses[r], resps[r])
      local got = S.decode(resps[r]).outputs[1]
      assert.same(alone[r].shape, got.shape)
      -- FP32 as %.9g: equal text means equal bits
      for k = 1, #alone[r].data do
        assert.is_true(got.data[k] == alone[r].data[k],
          ("request %d value %d: batched %.9g, alone %.9g"):format(r, k, got.data[k], alone[r].data[k]))
        -- the server without batching runs a lone row through the one-row
        -- kernels: the same values to float rounding
        assert.is_true(math.abs(got.data[k] - plain[r].data[k]) <= 1e-6,
          ("request %d value %d: batched %.9g, without batching %.9g"):format(r, k, got.data[k], plain[r].data[k]))
      end
    end
    local _, metrics = S.http(srv.port, "GET", "/metrics")
    local runs = S.metric(metrics, "oar_serve_batch_requests_count")
    assert.equal(2 * #bodies, S.metric(metrics, "oar_serve_batch_requests_sum"))
    assert.equal(2 * nrows, S.metric(metrics, "oar_serve_batch_rows_total"))
    assert.is_true(runs < 2 * #bodies, "no two requests shared a run: " .. runs .. " runs")
    assert.is_true(S.metric(metrics, 'oar_serve_batch_requests_bucket{le="1"}') < runs, metrics)

    -- one access log line per request: time, peer, method, path, status, bytes, latency
    -- (the start's readiness checks, the infers, the /metrics just now)
    -- (a line is written once its response has gone out: the last may lag curl's exit)
    local lines, posts = {}, 0
    for _ = 1, 20 do
      if select(2, S.read_file(log):gsub(" GET /metrics ", "")) > 0 then break end
      S.sleep(0.1)
    end
    for l in S.read_file(log):gmatch("[^\n]+") do lines[#lines + 1] = l end
    for _, l in ipairs(lines) do
      local method, path, status, bytes = l:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ 127%.0%.0%.1:%d+ " ..
        "(%u+) (%S+) (%d+) (%d+) [%d.]+ms$")
      assert.is_truthy(method, l)
      assert.equal("200", status, l)
      if method == "POST" then
        posts = posts + 1
        assert.equal("/v2/models/mlp/infer", path)
        assert.is_true(tonumber(bytes) > 50, l)
      end
    end
    assert.equal(2 * #bodies, posts)
    assert.matches(" GET /metrics 200 ", lines[#lines], 1, true)
  end)

  it("runs alone what does not stack, and stops batching when an output does not split by rows", function()
    save_mean(dir .. "/mean")
    local srv = start(dir .. "/mean", "--max-batch 8 --batch-timeout-ms 1000")
    local bodies, want = {}, {}
    for r = 1, 4 do
      bodies[r] = infer_body("x", 1, 4, { r, r + 1, r + 2, r + 3 })
      want[r] = r + 1.5
    end
    bodies[5] = infer_body("x", 2, 4, { 1, 1, 1, 1, 3, 3, 3, 3 })
    want[5] = 2
    local statuses, resps = concurrently(dir, srv.port, "/v2/models/mean/infer", bodies)
    for r = 1, #bodies do
      assert.equal(200, statuses[r], resps[r])
      assert.equal(want[r], S.decode(resps[r]).outputs[1].data[1])
    end
    assert.matches("dynamic batching is off", S.read_file(srv.log), 1, true)

    -- a model whose input has LoD: batching is off from the start
    local PF = require("spec.helpers.paddle_fixtures")
    local fx = PF.load("lstm")
    local lstm = start(fx.dir .. "/fluid_combined", "--max-batch 8")
    assert.matches("input 'ids' has LoD: dynamic batching is off", S.read_file(lstm.log), 1, true)
  end)

  it("answers 504 at a request's deadline, waiting or running, cancels the run, and keeps serving", function()
    save_loop(dir .. "/loop")
    local srv = start(dir .. "/loop", "--threads 1 --request-timeout-ms 1500")
    local function body(n, params)
      return json.encode({ inputs = { { name = "n", shape = { 1 }, datatype = "INT64", data = { n } } },
                           parameters = params })
    end
    local status, text = S.http(srv.port, "POST", "/v2/models/loop/infer", body(3))
    assert.equal(200, status, text)
    assert.same({ 3 }, S.decode(text).outputs[1].data)

    -- A: as good as forever, under the server's 1.5 s; B waits behind it with 0.3 s of its own
    S.write_file(dir .. "/a.json", body(2 ^ 40))
    local a = ("curl -s -m 20 -o %s -w '%%{http_code}' --data-binary @%s %s > %s"):format(q(dir .. "/a.out"),
      q(dir .. "/a.json"), q("http://127.0.0.1:" .. srv.port .. "/v2/models/loop/infer"), q(dir .. "/a.code"))
    os.execute("(" .. a .. ") & echo $! > " .. q(dir .. "/a.pid"))
    local metrics
    for _ = 1, 50 do   -- until A runs (5 s at most)
      metrics = select(2, S.http(srv.port, "GET", "/metrics"))
      if S.metric(metrics, "oar_serve_running_requests") == 1 then break end
      S.sleep(0.1)
    end
    assert.equal(1, S.metric(metrics, "oar_serve_running_requests"), metrics)
    status, text = S.http(srv.port, "POST", "/v2/models/loop/infer", body(1, { timeout_ms = 300 }))
    assert.equal(504, status, text)
    -- answered at its own deadline, while A still held the one worker
    assert.matches("deadline passed while it waited for a worker", S.decode(text).error, 1, true)
    S.sh("for i in $(seq 100); do kill -0 $(cat " .. q(dir .. "/a.pid") .. ") 2>/dev/null || break; sleep 0.1; done")
    assert.equal("504", S.read_file(dir .. "/a.code"))
    assert.matches("deadline passed while the model ran it", S.decode(S.read_file(dir .. "/a.out")).error, 1, true)

    -- A's run was cancelled: the one worker is free again
    status, text = S.http(srv.port, "POST", "/v2/models/loop/infer", body(5))
    assert.equal(200, status, text)
    assert.same({ 5 }, S.decode(text).outputs[1].data)
    -- a deadline already gone, and a bad one
    status, text = S.http(srv.port, "POST", "/v2/models/loop/infer", body(1, { timeout_ms = 0 }))
    assert.equal(504, status, text)
    status, text = S.http(srv.port, "POST", "/v2/models/loop/infer", body(1, { timeout_ms = -5 }))
    assert.equal(400, status, text)
    assert.matches("parameters.timeout_ms is not a non-negative integer", S.decode(text).error, 1, true)
    metrics = select(2, S.http(srv.port, "GET", "/metrics"))
    assert.equal(0, S.metric(metrics, "oar_serve_running_requests"))
    assert.equal(0, S.metric(metrics, "oar_serve_queued_requests"))
    assert.equal(3, S.metric(metrics, 'oar_serve_requests_total{endpoint="infer",status="504"}'))
    assert.equal(2, S.metric(metrics, 'oar_serve_requests_total{endpoint="infer",status="200"}'))
  end)

  it("takes and gives tensors in the binary data extension", function()
    S.save_mlp(dir .. "/mlp", 4, { 6 }, 3)
    local srv = start(dir .. "/mlp")
    local rows = { 1, 2, 3, 4, 0.5, -1, 0, 2 }
    local status, text = S.http(srv.port, "POST", "/v2/models/mlp/infer", infer_body("x", 2, 4, rows))
    assert.equal(200, status, text)
    local want = S.decode(text).outputs[1]

    status, text = S.http(srv.port, "GET", "/v2")
    assert.equal(200, status, text)
    assert.same({ "binary_tensor_data" }, S.decode(text).extensions)

    local ffi = require("ffi")
    local raw = ffi.string(ffi.new("float[8]", rows), 32)
    local head = json.encode({ id = "req-7", inputs = { { name = "x", shape = { 2, 4 }, datatype = "FP32",
      parameters = { binary_data_size = 32 } } }, parameters = { binary_data_output = true } })
    local headers
    status, text, headers = S.http(srv.port, "POST", "/v2/models/mlp/infer", head .. raw,
      { headers = { "Inference-Header-Content-Length: " .. #head } })
    assert.equal(200, status, text)
    assert.equal("application/octet-stream", headers["content-type"])
    local jl = tonumber(headers["inference-header-content-length"])
    assert.equal("req-7", S.decode(text:sub(1, jl)).id)   -- the request's id comes back
    local out = S.decode(text:sub(1, jl)).outputs[1]
    assert.same(want.shape, out.shape)
    assert.is_nil(out.data)
    assert.equal(24, out.parameters.binary_data_size)
    assert.equal(jl + 24, #text)
    local got = ffi.new("float[6]")
    ffi.copy(got, text:sub(jl + 1), 24)
    -- the JSON's %.9g text names the same float32
    local f = ffi.new("float[1]")
    for k = 1, 6 do
      f[0] = want.data[k]
      assert.is_true(got[k - 1] == f[0], ("value %d: %.9g, JSON %.9g"):format(k, got[k - 1], want.data[k]))
    end

    -- an output's own binary_data=false wins; the JSON alone has no header
    local head2 = json.encode({ inputs = { { name = "x", shape = { 2, 4 }, datatype = "FP32",
      parameters = { binary_data_size = 32 } } }, outputs = { { name = want.name, parameters = { binary_data = false } } },
      parameters = { binary_data_output = true } })
    status, text, headers = S.http(srv.port, "POST", "/v2/models/mlp/infer", head2 .. raw,
      { headers = { "Inference-Header-Content-Length: " .. #head2 } })
    assert.equal(200, status, text)
    assert.is_nil(headers["inference-header-content-length"])
    assert.same(want.data, S.decode(text).outputs[1].data)

    local bad = {
      { head .. raw:sub(1, 28), #head, "only 28 bytes follow the JSON" },
      { head .. raw .. "xx", #head, "34 bytes follow the JSON, but the binary inputs take 32" },
      { head .. raw, #head + 100, "is not a length within the body" },
      { head:gsub('"binary_data_size":32', '"binary_data_size":31') .. raw, #head, "binary_data_size 31, but shape and datatype make 32 bytes" },
    }
    for _, c in ipairs(bad) do
      status, text = S.http(srv.port, "POST", "/v2/models/mlp/infer", c[1],
        { headers = { "Inference-Header-Content-Length: " .. c[2] } })
      assert.equal(400, status, text)
      assert.matches(c[3], S.decode(text).error, 1, true)
    end
  end)
end)
