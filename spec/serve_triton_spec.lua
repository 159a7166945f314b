-- `oar serve` with NVIDIA's own client, tritonclient[http] from PyPI
-- (spec/helpers/triton_infer.py; tools/bootstrap installs it, and its
-- absence is a failure): health, model metadata, and inference on PaddlePaddle's
-- MLP, LeNet (FP32) and LSTM (INT64 ids with one level of LoD, as the
-- input's parameters.lod) fixtures, with binary inputs and outputs (the
-- binary tensor data extension, the client's default) and with JSON ones.
-- Every output's bits equal those of the C predictor (oar_predictor_*) on
-- the same inputs; the MLP and LeNet also row by row, each row its own
-- request, all sent at once to a server that batches them: each gets the
-- bits of its row in the C predictor's run of all of them. The request's
-- id comes back, and Triton's per-request timeout (1 us) gets a 504.
local ffi = require("ffi")
local json = require("dkjson")
local C = require("oar.lib").C
local F = require("spec.helpers.files")
local S = require("spec.helpers.serve")
local PF = require("spec.helpers.paddle_fixtures")
local q = S.sh_quote

local V2 = { [C.OAR_FP32] = "FP32", [C.OAR_FP64] = "FP64", [C.OAR_INT32] = "INT32", [C.OAR_INT64] = "INT64",
  [C.OAR_BOOL] = "BOOL" }

local function tensor_bytes(t)
  return ffi.string(C.oar_tensor_data(t.handle), t:numel() * tonumber(C.oar_dtype_size(C.oar_tensor_dtype(t.handle))))
end

-- the C predictor on inputs ({name, Tensor}): per output {dtype, shape, bytes}
local function c_predict(layout, inputs)
  local pp = ffi.new("oar_predictor_t *[1]")
  assert(C.oar_predictor_load_files(layout.model, layout.params, pp) == 0, ffi.string(C.oar_last_error()))
  local p = ffi.gc(pp[0], C.oar_predictor_free)
  for _, inp in ipairs(inputs) do
    local t = inp[2]
    local shape = t:shape()
    local lod = t:lod()[1]
    local dims, lodp = ffi.new("int64_t[?]", #shape, shape), lod and ffi.new("uint64_t[?]", #lod, lod)
    assert(C.oar_predictor_set_input_ex(p, inp[1], C.oar_tensor_dtype(t.handle), C.oar_tensor_data(t.handle), dims,
      #shape, lodp, lod and #lod or 0) == 0, ffi.string(C.oar_last_error()))
  end
  assert(C.oar_predictor_run(p) == 0, ffi.string(C.oar_last_error()))
  local outs = {}
  for i = 0, C.oar_predictor_num_outputs(p) - 1 do
    local dt, data, dims, nd = ffi.new("int[1]"), ffi.new("const void *[1]"), ffi.new("const int64_t *[1]"),
      ffi.new("int[1]")
    assert(C.oar_predictor_get_output_ex(p, i, dt, data, dims, nd, nil, nil) == 0)
    local shape, n = {}, 1
    for d = 0, nd[0] - 1 do shape[d + 1] = tonumber(dims[0][d]); n = n * shape[d + 1] end
    outs[i + 1] = { shape = shape, dtype = V2[dt[0]],
      bytes = ffi.string(data[0], n * tonumber(C.oar_dtype_size(dt[0]))) }
  end
  return outs
end

local function same_outputs(got, want, what)
  assert.equal(#want, #got, what)
  for i, w in ipairs(want) do
    local g = got[i]
    assert.equal(w.dtype, g.datatype, what)
    assert.same(w.shape, g.shape, what)
    assert.is_true(S.read_file(g.file) == w.bytes, what .. ": output " .. i .. "'s bits differ from the C predictor's")
  end
end

local have_client
do
  local code, out = S.sh("python3 -c 'import numpy, tritonclient.http'")
  have_client = code == 0 or ("tritonclient[http] is not installed (pip install 'tritonclient[http]'): " ..
    out:gsub("%s+$", ""):match("[^\n]*$"))
end

describe("oar serve with tritonclient[http]", function()
  local dir, srv

  before_each(function()
    dir = F.tmpdir()
    assert(os.execute("mkdir -p " .. q(dir)) == 0)
  end)
  after_each(function()
    S.stop(srv)
    srv = nil
    F.rmtree(dir)
  end)

  for _, case in ipairs({ { "mlp", true }, { "lenet", true }, { "lstm", false } }) do
    local name, rows = case[1], case[2]
    it(name .. ": metadata, and inference with binary and JSON tensors equal to the C predictor's", function()
      -- .ci/run installs the client: without it this path would go untested
      assert(have_client == true, have_client)
      assert.equal(0, (S.sh("test -x build/oar-serve")), "build/oar-serve is not built")
      local fx = PF.load(name)
      local layout
      for _, l in ipairs(fx.layouts) do if l.name == "fluid_combined" then layout = l end end
      local why = PF.missing(name, "fluid_combined")
      assert(not why, name .. " needs " .. tostring(why))
      srv = S.start(dir, layout.path, "--name " .. name .. " --threads 2" ..
        (rows and " --max-batch 64 --batch-timeout-ms 200" or " --max-batch 8"))

      local job = { url = "127.0.0.1:" .. srv.port, model = name, out_dir = dir, inputs = {}, split_rows = rows }
      for k, inp in ipairs(fx.inputs) do
        local t = inp[2]
        local file = dir .. "/in_" .. k .. ".bin"
        S.write_file(file, tensor_bytes(t))
        job.inputs[k] = { name = inp[1], datatype = V2[C.oar_tensor_dtype(t.handle)], shape = t:shape(), file = file,
          lod = t:lod()[1] }
      end
      S.write_file(dir .. "/job.json", json.encode(job))
      local code, out = S.sh("timeout 120 python3 spec/helpers/triton_infer.py " .. q(dir .. "/job.json") ..
        " 2>" .. q(dir .. "/client.err"))
      assert.equal(0, code, out .. S.read_file(dir .. "/client.err") .. S.read_file(srv.log))
      local r = S.decode(out)

      assert.is_true(r.live and r.ready and r.model_ready)
      assert.equal(name, r.metadata.name)
      assert.equal("oar", r.metadata.platform)
      for k, inp in ipairs(job.inputs) do
        assert.equal(inp.name, r.metadata.inputs[k].name)
        assert.equal(inp.datatype, r.metadata.inputs[k].datatype)
      end

      assert.equal("triton-1", r.id)
      assert.equal("504", tostring(r.timeout.status), json.encode(r.timeout))
      assert.matches("deadline passed", r.timeout.message, 1, true)

      local want = c_predict(layout, fx.inputs)
      same_outputs(r.runs.binary, want, "binary run")
      for _, o in ipairs(r.runs.binary) do assert.is_true(o.binary, "binary_data_output: a binary output") end
      same_outputs(r.runs.json, want, "JSON run")
      for _, o in ipairs(r.runs.json) do assert.is_false(o.binary, "binary_data=false: a JSON output") end
      if rows then
        -- each row's answer is its row of a many-row run, whether or not it
        -- shared a run (a lone row runs as two on a batching server)
        for row, got in ipairs(r.runs.rows) do
          local mine = {}
          for i, w in ipairs(want) do
            local shape = { 1 }
            for d = 2, #w.shape do shape[d] = w.shape[d] end
            local bytes = #w.bytes / w.shape[1]
            mine[i] = { dtype = w.dtype, shape = shape, bytes = w.bytes:sub((row - 1) * bytes + 1, row * bytes) }
          end
          same_outputs(got, mine, "row " .. row .. " on its own request")
        end
        local _, metrics = S.http(srv.port, "GET", "/metrics")
        -- the binary and JSON runs, then the rows: sent at once, they shared runs
        assert.equal(#r.runs.rows + 2, S.metric(metrics, "oar_serve_batch_requests_sum"))
        assert.is_true(S.metric(metrics, "oar_serve_batch_requests_count") < #r.runs.rows + 2, metrics)
      end
    end)
  end
end)
