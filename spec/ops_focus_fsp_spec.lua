-- similarity_focus and fsp with layers.similarity_focus / fsp_matrix: the
-- cases of Fluid 1.8's test_similarity_focus_op.py and test_fsp_op.py
-- (shapes reduced), expected values computed in plain Lua (the greedy walk
-- written as the Python test writes it: repeated argmax), fsp's gradient
-- against float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function fails(spec, want)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(want, tostring(err), 1, true)
end

-- x flat [N, D1, D2, D3]; the mask as the Python test computes it
local function focus_ref(x, d, axis, indexes)
  local st = { d[2] * d[3] * d[4], d[3] * d[4], d[4], 1 }
  local p, q = axis == 1 and 2 or 1, axis == 3 and 2 or 3
  local np_, nq = d[p + 1], d[q + 1]
  local out = {}
  for i = 1, d[1] * st[1] do out[i] = 0 end
  for b = 0, d[1] - 1 do
    for _, index in ipairs(indexes) do
      local ch = {}
      for u = 0, np_ - 1 do
        for v = 0, nq - 1 do ch[u * nq + v] = x[b * st[1] + index * st[axis + 1] + u * st[p + 1] + v * st[q + 1] + 1] end
      end
      local t1, t2, cnt = {}, {}, 0
      for _ = 1, np_ * nq do
        local best, bi = -math.huge, nil
        for k = 0, np_ * nq - 1 do
          if ch[k] > best then best, bi = ch[k], k end   -- the first maximum, as numpy's argmax
        end
        local u, v = math.floor(bi / nq), bi % nq
        local stop = false
        if not t1[u] and not t2[v] then
          t1[u], t2[v] = true, true
          for j = 0, d[axis + 1] - 1 do
            out[b * st[1] + j * st[axis + 1] + u * st[p + 1] + v * st[q + 1] + 1] = 1
          end
          cnt = cnt + 1
          stop = cnt == math.min(np_, nq)
        end
        if stop then break end
        ch[bi] = -math.huge
      end
    end
  end
  return out
end

describe("similarity_focus (test_similarity_focus_op.py)", function()
  it("TestSimilarityFocusOp: the fixed 2 x 3 x 2 x 2 input, axis 1, indexes {0}", function()
    local x = { 0.8, 0.1, 0.4, 0.5, 0.9, 0.7, 0.9, 0.9, 0.8, 0.9, 0.1, 0.2,
                0.2, 0.5, 0.3, 0.4, 0.9, 0.7, 0.8, 0.4, 0.0, 0.2, 0.4, 0.7 }
    -- by hand: image 0, channel 0 {0.8 0.1; 0.4 0.5}: (0,0) then (1,1);
    -- image 1 {0.2 0.5; 0.3 0.4}: (0,1) then (1,0); repeated over the 3 channels
    local want = { 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0 }
    assert.same(want, focus_ref(x, { 2, 3, 2, 2 }, 1, { 0 }))
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "similarity_focus", dtype = dt,
        inputs = { X = T.tensor(x, { shape = { 2, 3, 2, 2 }, dtype = dt }) }, attrs = { axis = 1, indexes = { 0 } },
        expect = { Out = { shape = { 2, 3, 2, 2 }, data = want } } }
    end
  end)

  local CASES = {
    { name = "TestSimilarityFocusOp_axis1: [3, 4, 5, 6], indexes {0, 3}", d = { 3, 4, 5, 6 }, axis = 1, idx = { 0, 3 } },
    { name = "TestSimilarityFocusOp_axis2: [3, 7, 8, 9], indexes {0, 3, 5}", d = { 3, 7, 8, 9 }, axis = 2, idx = { 0, 3, 5 } },
    { name = "TestSimilarityFocusOp_axis3: [2, 8, 8, 13], indexes {0, 2, 7, 9}", d = { 2, 8, 8, 13 }, axis = 3,
      idx = { 0, 2, 7, 9 } },
    { name = "a slice with more rows than columns", d = { 2, 6, 2, 3 }, axis = 3, idx = { 1 } },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local n = o.d[1] * o.d[2] * o.d[3] * o.d[4]
      local x = R.uniform(n, 61, 0, 1)
      local want = focus_ref(x, o.d, o.axis, o.idx)
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "similarity_focus", dtype = dt,
          inputs = { X = T.tensor(x, { shape = o.d, dtype = dt }) }, attrs = { axis = o.axis, indexes = o.idx },
          expect = { Out = { shape = o.d, data = want } } }
      end
    end)
  end

  it("rejects an index out of range and a 3-D input, naming the variable", function()
    fails({ type = "similarity_focus", inputs = { X = T.tensor(R.symmetric(24), { shape = { 2, 3, 2, 2 } }) },
            attrs = { axis = 1, indexes = { 3 } } }, "indexes[0] = 3 must be in [0, 3) (X ('in_X_1') dim 1)")
    fails({ type = "similarity_focus", inputs = { X = T.tensor(R.symmetric(12), { shape = { 3, 2, 2 } }) },
            attrs = { axis = 1, indexes = { 0 } } }, "X ('in_X_1') must be 4-D [N, A, B, C], got shape [3, 2, 2]")
    fails({ type = "similarity_focus", inputs = { X = T.tensor(R.symmetric(24), { shape = { 2, 3, 2, 2 } }) },
            attrs = { axis = 0, indexes = { 0 } } }, "axis")
  end)
end)

-- Out[n, i, j] = mean over the H W cells of x[n, i] y[n, j]
local function fsp_ref(x, y, n, c1, c2, s)
  local out = {}
  for b = 0, n - 1 do
    for i = 0, c1 - 1 do
      for j = 0, c2 - 1 do
        local sum = 0
        for t = 0, s - 1 do sum = sum + x[(b * c1 + i) * s + t + 1] * y[(b * c2 + j) * s + t + 1] end
        out[#out + 1] = sum / s
      end
    end
  end
  return out
end

describe("fsp (test_fsp_op.py)", function()
  it("TestFSPOp: X [2, 3, 5, 6], Y [2, 4, 5, 6], values in [0, 10)", function()
    local x, y = R.uniform(180, 3, 0, 10), R.uniform(240, 5, 0, 10)
    local want = fsp_ref(x, y, 2, 3, 4, 30)
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "fsp", dtype = dt, rtol = dt == "float32" and 1e-5 or 1e-12, atol = 0,
        inputs = { X = T.tensor(x, { shape = { 2, 3, 5, 6 }, dtype = dt }),
                   Y = T.tensor(y, { shape = { 2, 4, 5, 6 }, dtype = dt }) },
        expect = { Out = { shape = { 2, 3, 4 }, data = want } } }
    end
  end)

  it("gradient against finite differences", function()
    T.check_grad{ type = "fsp", dtype = "float64",
      inputs = { X = T.tensor(R.symmetric(2 * 3 * 6, 7), { shape = { 2, 3, 2, 3 }, dtype = "float64" }),
                 Y = T.tensor(R.symmetric(2 * 2 * 6, 9), { shape = { 2, 2, 2, 3 }, dtype = "float64" }) },
      wrt = { "X", "Y" }, delta = 1e-5, max_rel = 1e-7 }
  end)

  it("rejects mismatched H, W or N, naming both variables", function()
    fails({ type = "fsp", inputs = { X = T.tensor(R.symmetric(12), { shape = { 1, 2, 2, 3 } }),
                                     Y = T.tensor(R.symmetric(12), { shape = { 1, 2, 3, 2 } }) } },
          "X ('in_X_1') [1, 2, 2, 3] and Y ('in_Y_1') [1, 2, 3, 2] must agree in N, H and W")
  end)
end)

describe("layers.similarity_focus / fsp_matrix", function()
  local oar = require("oar")
  local layers = oar.layers

  it("build their ops and run", function()
    local main, startup = oar.Program(), oar.Program()
    local m, f
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 2, 3, 2, 2 }, dtype = "float64", append_batch_size = false }
      local y = layers.data{ name = "y", shape = { 2, 1, 2, 2 }, dtype = "float64", append_batch_size = false }
      m = layers.similarity_focus{ input = x, axis = 1, indexes = { 0 } }
      f = layers.fsp_matrix(x, y)
      assert.same({ 2, 3, 1 }, f.shape)
    end)
    local xv = { 0.8, 0.1, 0.4, 0.5, 0.9, 0.7, 0.9, 0.9, 0.8, 0.9, 0.1, 0.2,
                 0.2, 0.5, 0.3, 0.4, 0.9, 0.7, 0.8, 0.4, 0.0, 0.2, 0.4, 0.7 }
    local yv = { 1, 2, 3, 4, -1, 0.5, 2, 0 }
    local function t(shape, v)
      local r = oar.Tensor{ shape = shape, dtype = "float64" }
      for i = 1, #v do r:data()[i - 1] = v[i] end
      return r
    end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = t({ 2, 3, 2, 2 }, xv), y = t({ 2, 1, 2, 2 }, yv) }, fetch_list = { m, f } })
    local mask = {}
    for i = 1, 24 do mask[i] = got[1]:data()[i - 1] end
    assert.same(focus_ref(xv, { 2, 3, 2, 2 }, 1, { 0 }), mask)
    local want = fsp_ref(xv, yv, 2, 3, 1, 4)
    for i = 1, 6 do assert.is_true(math.abs(got[2]:data()[i - 1] - want[i]) < 1e-12) end
    local ops = main:global_block():ops()
    assert.equal("similarity_focus", ops[1].type)
    assert.same({ 0 }, ops[1]:attr("indexes"))
    assert.equal("fsp", ops[2].type)
  end)

  it("reject bad arguments (TestSimilarityFocusOpError)", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 16, 3, 2, 2 }, dtype = "float32", append_batch_size = false }
      local function err(f, want)
        local ok, e = pcall(f)
        assert.is_false(ok)
        assert.matches(want, tostring(e), 1, true)
      end
      err(function() layers.similarity_focus{ input = { 1, 2 }, axis = 1, indexes = { 0 } } end,
        "similarity_focus: 'input' must be a Variable")
      err(function() layers.similarity_focus{ input = x, axis = 1.5, indexes = { 0 } } end,
        "similarity_focus: 'axis' must be 1, 2 or 3")
      err(function() layers.similarity_focus{ input = x, axis = 1, indexes = 0 } end,
        "similarity_focus: 'indexes' must be a non-empty list of integers")
      err(function() layers.similarity_focus{ input = x, axis = 2, indexes = { 2 } } end,
        "similarity_focus: 'indexes'[1] = 2 must be in [0, 2) (dim 2 of 'input')")
      local y = layers.data{ name = "y", shape = { 16, 3, 2, 2 }, dtype = "float64", append_batch_size = false }
      err(function() layers.fsp_matrix(x, y) end, "fsp_matrix: 'y' must be a float32 Variable (x's dtype)")
    end)
  end)
end)
