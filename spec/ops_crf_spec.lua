-- linear_chain_crf (+ grad), crf_decoding and chunk_eval (Fluid 1.8):
-- values against plain Lua (the forward algorithm in log space, brute force
-- over every tag path for tiny cases, Fluid's OpTest reference with scaled
-- forward vectors re-computed here, Viterbi by enumeration, chunks from
-- generated chunk lists), LoD and padded layouts, empty sequences,
-- gradients by float64 finite differences, and errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

-- ---- plain-Lua references ----------------------------------------------------

local function logsumexp(v)
  local m = -math.huge
  for _, x in ipairs(v) do if x > m then m = x end end
  local s = 0
  for _, x in ipairs(v) do s = s + math.exp(x - m) end
  return m + math.log(s)
end

-- x: flat emission, row r tag i at x[r * d + i + 1]; w flat [(d + 2), d]
local function W(w, d, r, c) return w[r * d + c + 1] end
local function X(x, d, r, c) return x[r * d + c + 1] end

local function path_score(x, w, d, st, path)
  local s = W(w, d, 0, path[1]) + W(w, d, 1, path[#path])
  for k = 1, #path do
    s = s + X(x, d, st + k - 1, path[k])
    if k > 1 then s = s + W(w, d, path[k - 1] + 2, path[k]) end
  end
  return s
end

-- log Z by the forward algorithm in log space
local function log_z(x, w, d, st, n)
  local a = {}
  for i = 0, d - 1 do a[i] = W(w, d, 0, i) + X(x, d, st, i) end
  for k = 1, n - 1 do
    local b = {}
    for i = 0, d - 1 do
      local t = {}
      for j = 0, d - 1 do t[#t + 1] = a[j] + W(w, d, j + 2, i) end
      b[i] = logsumexp(t) + X(x, d, st + k, i)
    end
    a = b
  end
  local t = {}
  for i = 0, d - 1 do t[#t + 1] = a[i] + W(w, d, 1, i) end
  return logsumexp(t)
end

-- every tag path of length n, in lexicographic order
local function all_paths(d, n)
  local out, p = {}, {}
  local function rec(k)
    if k > n then out[#out + 1] = { unpack(p) }; return end
    for i = 0, d - 1 do p[k] = i; rec(k + 1) end
  end
  rec(1)
  return out
end

local function nll(x, w, d, st, labels)
  local n = #labels
  if n == 0 then return 0 end
  return log_z(x, w, d, st, n) - path_score(x, w, d, st, labels)
end

-- Fluid's OpTest reference (LinearChainCrfForward): scaled forward vectors
local function fluid_forward(x, w, d, starts, labels)
  local rows = starts[#starts]
  local alpha, xe, we, ll = {}, {}, {}, {}
  for i = 1, #w do we[i] = math.exp(w[i]) end
  local rowmax = {}
  for r = 0, rows - 1 do
    local m = -math.huge
    for i = 0, d - 1 do m = math.max(m, X(x, d, r, i)) end
    rowmax[r] = m
    for i = 0, d - 1 do xe[r * d + i + 1] = math.exp(X(x, d, r, i) - m) end
  end
  for i = 1, rows * d do alpha[i] = 0 end
  for s = 1, #starts - 1 do
    local st, n = starts[s], starts[s + 1] - starts[s]
    if n == 0 then ll[s] = 0 else
      local function norm(r)
        local sum = 0
        for i = 0, d - 1 do sum = sum + alpha[r * d + i + 1] end
        for i = 0, d - 1 do alpha[r * d + i + 1] = alpha[r * d + i + 1] / sum end
        return sum
      end
      for i = 0, d - 1 do alpha[st * d + i + 1] = we[i + 1] * xe[st * d + i + 1] end
      local l = -rowmax[st] - math.log(norm(st))
      for k = 1, n - 1 do
        local r = st + k
        for i = 0, d - 1 do
          local sum = 0
          for j = 0, d - 1 do sum = sum + alpha[(r - 1) * d + j + 1] * we[(j + 2) * d + i + 1] end
          alpha[r * d + i + 1] = xe[r * d + i + 1] * sum
        end
        l = l - rowmax[r] - math.log(norm(r))
      end
      local sum = 0
      for i = 0, d - 1 do sum = sum + alpha[(st + n - 1) * d + i + 1] * we[d + i + 1] end
      l = l - math.log(sum)
      local y = {}
      for k = 1, n do y[k] = labels[st + k] end
      ll[s] = -(l + path_score(x, w, d, st, y))
    end
  end
  return alpha, xe, we, ll
end

local function ints(n, seed, hi)
  local u = R.uniform(n, seed, 0, hi)
  for i = 1, n do u[i] = math.floor(u[i]) end
  return u
end

local function starts_of(lens)
  local s = { 0 }
  for i, n in ipairs(lens) do s[i + 1] = s[i] + n end
  return s
end

local function crf_case(lens, d, seed)
  local starts = starts_of(lens)
  local rows = starts[#starts]
  return {
    starts = starts, rows = rows, d = d,
    x = R.symmetric(rows * d, seed),
    w = R.symmetric((d + 2) * d, seed + 1, 0.5),
    labels = ints(rows, seed + 2, d),
  }
end

local function crf_inputs(c, dtype)
  return {
    Emission = T.tensor(c.x, { shape = { c.rows, c.d }, lod = { c.starts }, dtype = dtype }),
    Transition = T.tensor(c.w, { shape = { c.d + 2, c.d }, dtype = dtype }),
    Label = T.tensor(c.labels, { shape = { c.rows, 1 }, lod = { c.starts }, dtype = "int64" }),
  }
end

-- ---- linear_chain_crf ---------------------------------------------------------

describe("linear_chain_crf", function()
  it("gives the negative log-likelihood of brute force over every tag path (tiny cases)", function()
    local c = crf_case({ 1, 2, 4, 3 }, 3, 11)
    local res = T.run{ type = "linear_chain_crf", inputs = crf_inputs(c) }
    local got = res.LogLikelihood[1]
    assert.same({ 4, 1 }, got.shape)
    for s = 1, 4 do
      local st, n = c.starts[s], c.starts[s + 1] - c.starts[s]
      local scores = {}
      for _, p in ipairs(all_paths(c.d, n)) do scores[#scores + 1] = path_score(c.x, c.w, c.d, st, p) end
      local y = {}
      for k = 1, n do y[k] = c.labels[st + k] end
      local want = logsumexp(scores) - path_score(c.x, c.w, c.d, st, y)
      assert.is_true(want > 0)
      assert.near(want, got.data[s], 1e-10)
      assert.near(nll(c.x, c.w, c.d, st, y), got.data[s], 1e-10)
    end
  end)

  it("matches Fluid's OpTest (17 tags, sequences of 3, 0, 5 and 1 rows): Alpha, EmissionExps, TransitionExps, LogLikelihood", function()
    local c = crf_case({ 3, 0, 5, 1 }, 17, 5)
    local alpha, xe, we, ll = fluid_forward(c.x, c.w, c.d, c.starts, c.labels)
    T.check_output{ type = "linear_chain_crf", inputs = crf_inputs(c), atol = 1e-12, rtol = 1e-10,
      expect = { Alpha = { shape = { c.rows, 17 }, data = alpha, lod = { c.starts } },
                 EmissionExps = { shape = { c.rows, 17 }, data = xe },
                 TransitionExps = { shape = { 19, 17 }, data = we },
                 LogLikelihood = { shape = { 4, 1 }, data = ll } } }
    assert.equal(0, ll[2])   -- the empty sequence costs nothing
    -- and the log-space forward algorithm agrees with the scaled one
    for s = 1, 4 do
      local y = {}
      for k = c.starts[s] + 1, c.starts[s + 1] do y[#y + 1] = c.labels[k] end
      assert.near(nll(c.x, c.w, c.d, c.starts[s], y), ll[s], 1e-10)
    end
  end)

  it("runs in float32 with float64's values to float precision", function()
    local c = crf_case({ 4, 2 }, 5, 21)
    local res = T.run{ type = "linear_chain_crf", inputs = crf_inputs(c, "float32"), dtype = "float32" }
    local _, _, _, ll = fluid_forward(c.x, c.w, c.d, c.starts, c.labels)
    T.assert_close(res.LogLikelihood[1], { shape = { 2, 1 }, data = ll }, 1e-4, 1e-5)
  end)

  it("takes a padded Emission [B, T, D] with Length, Label [B, T]; padding gives 0 in Alpha", function()
    local d, tmax, lens = 4, 4, { 2, 4, 0 }
    local c = crf_case(lens, d, 31)
    local pe, pl = {}, {}
    for b = 1, 3 do
      for t = 1, tmax do
        local r = c.starts[b] + t - 1
        for i = 1, d do pe[#pe + 1] = t <= lens[b] and c.x[r * d + i] or 0 end
        pl[#pl + 1] = t <= lens[b] and c.labels[r + 1] or 0
      end
    end
    local alpha, _, _, ll = fluid_forward(c.x, c.w, d, c.starts, c.labels)
    local palpha = {}
    for b = 1, 3 do
      for t = 1, tmax do
        local r = c.starts[b] + t - 1
        for i = 1, d do palpha[#palpha + 1] = t <= lens[b] and alpha[r * d + i] or 0 end
      end
    end
    T.check_output{ type = "linear_chain_crf", atol = 1e-12,
      inputs = { Emission = T.tensor(pe, { shape = { 3, tmax, d } }),
                 Transition = T.tensor(c.w, { shape = { d + 2, d } }),
                 Label = T.tensor(pl, { shape = { 3, tmax }, dtype = "int64" }),
                 Length = T.tensor(lens, { shape = { 3 }, dtype = "int64" }) },
      expect = { LogLikelihood = { shape = { 3, 1 }, data = ll },
                 Alpha = { shape = { 3, tmax, d }, data = palpha } } }
  end)

  it("has Emission and Transition gradients equal to float64 finite differences (LoD, with an empty sequence)", function()
    local c = crf_case({ 3, 1, 0, 4 }, 4, 41)
    T.check_grad{ type = "linear_chain_crf", inputs = crf_inputs(c), wrt = { "Emission", "Transition" },
                  of = { "LogLikelihood" }, delta = 1e-5, max_rel = 1e-6 }
  end)

  it("has gradients equal to finite differences in the padded layout, Emission alone too", function()
    local d, tmax, lens = 3, 3, { 3, 1 }
    local pe = R.symmetric(2 * tmax * d, 51)
    local pl = { 2, 0, 1, 1, 0, 0 }
    local inputs = { Emission = T.tensor(pe, { shape = { 2, tmax, d } }),
                     Transition = T.tensor(R.symmetric((d + 2) * d, 52, 0.5), { shape = { d + 2, d } }),
                     Label = T.tensor(pl, { shape = { 2, tmax, 1 }, dtype = "int64" }),
                     Length = T.tensor(lens, { shape = { 2, 1 }, dtype = "int64" }) }
    T.check_grad{ type = "linear_chain_crf", inputs = inputs, wrt = { "Emission", "Transition" },
                  of = { "LogLikelihood" }, delta = 1e-5, max_rel = 1e-6 }
    T.check_grad{ type = "linear_chain_crf", inputs = inputs, wrt = { "Emission" }, no_grad = { "Transition" },
                  of = { "LogLikelihood" }, delta = 1e-5, max_rel = 1e-6 }
  end)

  it("refuses a Transition of the wrong shape, labels out of range, a missing LoD, wrong dtypes", function()
    local c = crf_case({ 2, 2 }, 3, 61)
    local inputs = crf_inputs(c)
    inputs.Transition = T.tensor(R.symmetric(9), { shape = { 3, 3 } })
    expect_error(function() T.run{ type = "linear_chain_crf", inputs = inputs } end,
      "linear_chain_crf", "Transition", "[(D + 2), D]")
    inputs = crf_inputs(c)
    inputs.Transition = T.tensor(R.symmetric(24), { shape = { 6, 4 } })
    expect_error(function() T.run{ type = "linear_chain_crf", inputs = inputs } end,
      "linear_chain_crf", "Emission", "tags")
    inputs = crf_inputs(c)
    local bad = { unpack(c.labels) }
    bad[3] = 3
    inputs.Label = T.tensor(bad, { shape = { 4, 1 }, lod = { c.starts }, dtype = "int64" })
    expect_error(function() T.run{ type = "linear_chain_crf", inputs = inputs } end,
      "linear_chain_crf", "Label", "holds 3 at row 2", "0..2")
    inputs = crf_inputs(c)
    inputs.Emission = T.tensor(c.x, { shape = { 4, 3 } })
    expect_error(function() T.run{ type = "linear_chain_crf", inputs = inputs } end,
      "linear_chain_crf", "Emission", "LoD")
    inputs = crf_inputs(c)
    inputs.Label = T.tensor(c.labels, { shape = { 4, 1 }, lod = { c.starts }, dtype = "int32" })
    expect_error(function() T.run{ type = "linear_chain_crf", inputs = inputs } end,
      "linear_chain_crf", "Label", "int64")
    inputs = crf_inputs(c)
    inputs.Length = T.tensor({ 2, 2 }, { dtype = "int64", shape = { 2 } })
    expect_error(function() T.run{ type = "linear_chain_crf", inputs = inputs } end,
      "linear_chain_crf", "Emission", "[B, T, D]")
  end)
end)

-- ---- crf_decoding -----------------------------------------------------------

describe("crf_decoding", function()
  local function best_path(c, st, n)
    local best, arg = -math.huge, nil
    for _, p in ipairs(all_paths(c.d, n)) do
      local s = path_score(c.x, c.w, c.d, st, p)
      if s > best then best, arg = s, p end
    end
    return arg
  end

  it("finds the highest-scoring path of brute force over every path, per sequence", function()
    local c = crf_case({ 4, 1, 0, 3, 5 }, 3, 71)
    c.x = R.symmetric(#c.x, 72, 3)   -- emissions that matter
    local want = {}
    for s = 1, 5 do
      local st, n = c.starts[s], c.starts[s + 1] - c.starts[s]
      if n > 0 then for _, v in ipairs(best_path(c, st, n)) do want[#want + 1] = v end end
    end
    local inputs = crf_inputs(c)
    inputs.Label = nil
    T.check_output{ type = "crf_decoding", inputs = inputs,
                    expect = { ViterbiPath = { shape = { c.rows, 1 }, data = want, lod = { c.starts } } } }
    -- with Label: 1 where the path has the label's tag
    inputs.Label = T.tensor(c.labels, { shape = { c.rows, 1 }, lod = { c.starts }, dtype = "int64" })
    local hits = {}
    for i = 1, c.rows do hits[i] = want[i] == c.labels[i] and 1 or 0 end
    T.check_output{ type = "crf_decoding", inputs = inputs, expect = { ViterbiPath = { data = hits } } }
    -- float32 decodes the same
    inputs.Label = nil
    inputs.Emission = T.tensor(c.x, { shape = { c.rows, c.d }, lod = { c.starts }, dtype = "float32" })
    inputs.Transition = T.tensor(c.w, { shape = { c.d + 2, c.d }, dtype = "float32" })
    T.check_output{ type = "crf_decoding", inputs = inputs, dtype = "float32", expect = { ViterbiPath = { data = want } } }
  end)

  it("matches Fluid's OpTest (10 tags, 3 sequences) re-computed by a plain Viterbi", function()
    local c = crf_case({ 5, 2, 4 }, 10, 81)
    -- Fluid's CRFDecoding reference: max-product with ties to the first tag
    local want = {}
    for s = 1, 3 do
      local st, n, d = c.starts[s], c.starts[s + 1] - c.starts[s], c.d
      local a, track = {}, {}
      for i = 0, d - 1 do a[i] = W(c.w, d, 0, i) + X(c.x, d, st, i) end
      for k = 1, n - 1 do
        local b = {}
        track[k] = {}
        for i = 0, d - 1 do
          local best, arg = -math.huge, 0
          for j = 0, d - 1 do
            local v = a[j] + W(c.w, d, j + 2, i)
            if v > best then best, arg = v, j end
          end
          b[i], track[k][i] = best + X(c.x, d, st + k, i), arg
        end
        a = b
      end
      local best, arg = -math.huge, 0
      for i = 0, d - 1 do
        local v = a[i] + W(c.w, d, 1, i)
        if v > best then best, arg = v, i end
      end
      local p = { [n] = arg }
      for k = n - 1, 1, -1 do p[k] = track[k][p[k + 1]] end
      for k = 1, n do want[#want + 1] = p[k] end
    end
    local inputs = crf_inputs(c)
    inputs.Label = nil
    T.check_output{ type = "crf_decoding", inputs = inputs, expect = { ViterbiPath = { data = want } } }
  end)

  it("decodes a padded Emission with Length into [B, T], 0 on padding", function()
    local c = crf_case({ 3, 1 }, 3, 91)
    c.x = R.symmetric(#c.x, 92, 3)
    local tmax = 3
    local pe = {}
    local lens = { 3, 1 }
    for b = 1, 2 do
      for t = 1, tmax do
        for i = 1, 3 do pe[#pe + 1] = t <= lens[b] and c.x[(c.starts[b] + t - 1) * 3 + i] or 0 end
      end
    end
    local p1, p2 = best_path(c, 0, 3), best_path(c, 3, 1)
    T.check_output{ type = "crf_decoding",
      inputs = { Emission = T.tensor(pe, { shape = { 2, tmax, 3 } }),
                 Transition = T.tensor(c.w, { shape = { 5, 3 } }),
                 Length = T.tensor(lens, { shape = { 2 }, dtype = "int64" }) },
      expect = { ViterbiPath = { shape = { 2, tmax }, data = { p1[1], p1[2], p1[3], p2[1], 0, 0 } } } }
  end)

  it("refuses a Transition of the wrong shape and a bad Length", function()
    local c = crf_case({ 2 }, 3, 99)
    local inputs = crf_inputs(c)
    inputs.Label = nil
    inputs.Transition = T.tensor(R.symmetric(12), { shape = { 4, 3 } })
    expect_error(function() T.run{ type = "crf_decoding", inputs = inputs } end, "crf_decoding", "Transition")
    expect_error(function()
      T.run{ type = "crf_decoding", inputs = {
        Emission = T.tensor(R.symmetric(6), { shape = { 1, 2, 3 } }),
        Transition = T.tensor(R.symmetric(15), { shape = { 5, 3 } }),
        Length = T.tensor({ 3 }, { shape = { 1 }, dtype = "int64" }) } }
    end, "crf_decoding", "Length", "0..2")
  end)
end)

-- ---- chunk_eval -------------------------------------------------------------

-- tags of a chunk of `len` rows of `type` under a scheme
local ENCODE = {
  IOB = { n = 2, tags = function(len) local t = { 0 }; for _ = 2, len do t[#t + 1] = 1 end; return t end },
  IOE = { n = 2, tags = function(len) local t = {}; for _ = 2, len do t[#t + 1] = 0 end; t[#t + 1] = 1; return t end },
  IOBES = { n = 4, tags = function(len)
    if len == 1 then return { 3 } end
    local t = { 0 }
    for _ = 3, len do t[#t + 1] = 1 end
    t[#t + 1] = 2
    return t
  end },
  plain = { n = 1, tags = function(len) local t = {}; for _ = 1, len do t[#t + 1] = 0 end; return t end },
}

-- a sequence of `len` rows made of random chunks (and outside rows), and
-- the set of its chunks "begin:end:type"
local function gen_seq(scheme, types, len, seed)
  local enc = ENCODE[scheme]
  local u = R.uniform(4 * len + 4, seed, 0, 1)
  local ui = 0
  local function rnd() ui = ui + 1; return u[ui] end
  local seq, chunks, pos, last = {}, {}, 0, -1
  while pos < len do
    if rnd() < 0.3 then
      seq[#seq + 1] = types * enc.n   -- outside
      pos, last = pos + 1, -1
    else
      local clen = math.min(len - pos, 1 + math.floor(rnd() * 3))
      local ty = math.floor(rnd() * types)
      if scheme == "plain" and ty == last then ty = (ty + 1) % types end   -- plain cannot split a run
      for _, t in ipairs(enc.tags(clen)) do seq[#seq + 1] = ty * enc.n + t end
      chunks[#chunks + 1] = { pos, pos + clen - 1, ty }
      pos, last = pos + clen, ty
    end
  end
  return seq, chunks
end

describe("chunk_eval", function()
  local function run(inf, lab, starts, attrs, seqlen)
    local inputs
    if seqlen then
      inputs = { Inference = T.tensor(inf, { shape = { #seqlen, #inf / #seqlen }, dtype = "int64" }),
                 Label = T.tensor(lab, { shape = { #seqlen, #inf / #seqlen }, dtype = "int64" }),
                 SeqLength = T.tensor(seqlen, { shape = { #seqlen }, dtype = "int64" }) }
    else
      inputs = { Inference = T.tensor(inf, { shape = { #inf, 1 }, lod = { starts }, dtype = "int64" }),
                 Label = T.tensor(lab, { shape = { #lab, 1 }, lod = { starts }, dtype = "int64" }) }
    end
    return T.run{ type = "chunk_eval", inputs = inputs, attrs = attrs }
  end

  it("counts an ill-formed IOB sequence as Fluid does (an I after O starts a chunk)", function()
    -- tags: B-0 0, I-0 1, B-1 2, I-1 3, O 4
    local res = run({ 0, 1, 4, 3, 3, 1 }, { 0, 1, 4, 2, 3, 3 }, { 0, 6 }, { num_chunk_types = 2 })
    assert.same({ 3 }, res.NumInferChunks[1].data)
    assert.same({ 2 }, res.NumLabelChunks[1].data)
    assert.same({ 1 }, res.NumCorrectChunks[1].data)
    assert.near(1 / 3, res.Precision[1].data[1], 1e-6)
    assert.near(1 / 2, res.Recall[1].data[1], 1e-6)
    assert.near(0.4, res["F1-Score"][1].data[1], 1e-6)
    assert.equal("float32", res.Precision[1].dtype)
    assert.equal("int64", res.NumInferChunks[1].dtype)
  end)

  for _, scheme in ipairs({ "IOB", "IOE", "IOBES", "plain" }) do
    it("matches chunk sets generated for " .. scheme .. " (Fluid's OpTest, re-computed), excluded types too", function()
      local types, lens = 3, { 7, 0, 12, 5, 9 }
      for _, excluded in ipairs({ {}, { 1 } }) do
        local inf, lab, starts = {}, {}, { 0 }
        local ni, nl, nc = 0, 0, 0
        local ex = {}
        for _, t in ipairs(excluded) do ex[t] = true end
        for s, len in ipairs(lens) do
          local si, ci = gen_seq(scheme, types, len, 100 + s)
          local sl, cl = gen_seq(scheme, types, len, 200 + s)
          if s == 3 then sl, cl = si, ci end   -- one sequence labelled exactly as inferred
          for _, v in ipairs(si) do inf[#inf + 1] = v end
          for _, v in ipairs(sl) do lab[#lab + 1] = v end
          starts[#starts + 1] = starts[#starts] + len
          local set = {}
          for _, c in ipairs(cl) do
            if not ex[c[3]] then nl = nl + 1; set[table.concat(c, ":")] = true end
          end
          for _, c in ipairs(ci) do
            if not ex[c[3]] then
              ni = ni + 1
              if set[table.concat(c, ":")] then nc = nc + 1 end
            end
          end
        end
        local res = run(inf, lab, starts, { num_chunk_types = types, chunk_scheme = scheme,
                                            excluded_chunk_types = excluded })
        assert.same({ ni }, res.NumInferChunks[1].data)
        assert.same({ nl }, res.NumLabelChunks[1].data)
        assert.same({ nc }, res.NumCorrectChunks[1].data)
        local p, r = nc / ni, nc / nl
        assert.near(p, res.Precision[1].data[1], 1e-6)
        assert.near(r, res.Recall[1].data[1], 1e-6)
        assert.near(nc > 0 and 2 * p * r / (p + r) or 0, res["F1-Score"][1].data[1], 1e-6)
        assert.is_true(nc > 0 and nc < ni)
        -- padded with SeqLength: the same counts
        local tmax = 12
        local pi, pl = {}, {}
        for s, len in ipairs(lens) do
          for t = 1, tmax do
            pi[#pi + 1] = t <= len and inf[starts[s] + t] or 0
            pl[#pl + 1] = t <= len and lab[starts[s] + t] or 0
          end
        end
        local pres = run(pi, pl, nil, { num_chunk_types = types, chunk_scheme = scheme,
                                        excluded_chunk_types = excluded }, lens)
        assert.same({ nc }, pres.NumCorrectChunks[1].data)
        assert.same({ ni }, pres.NumInferChunks[1].data)
      end
    end)
  end

  it("gives 0 precision, recall and F1 when nothing is found", function()
    local res = run({ 4, 4 }, { 4, 4 }, { 0, 2 }, { num_chunk_types = 2 })
    assert.same({ 0 }, res.Precision[1].data)
    assert.same({ 0 }, res.Recall[1].data)
    assert.same({ 0 }, res["F1-Score"][1].data)
  end)

  it("refuses tags out of range, different LoDs and an unknown scheme", function()
    expect_error(function() run({ 0, 5 }, { 0, 1 }, { 0, 2 }, { num_chunk_types = 2 }) end,
      "chunk_eval", "Inference", "holds 5 at row 1", "0..4")
    expect_error(function()
      T.run{ type = "chunk_eval", attrs = { num_chunk_types = 2 }, inputs = {
        Inference = T.tensor({ 0, 1, 4 }, { shape = { 3, 1 }, lod = { { 0, 1, 3 } }, dtype = "int64" }),
        Label = T.tensor({ 0, 1, 4 }, { shape = { 3, 1 }, lod = { { 0, 2, 3 } }, dtype = "int64" }) } }
    end, "chunk_eval", "same LoD")
    expect_error(function() run({ 0 }, { 0 }, { 0, 1 }, { num_chunk_types = 2, chunk_scheme = "BIO" }) end,
      "chunk_scheme", "BIO")
    expect_error(function() run({ 0 }, { 0 }, { 0, 1 }, {}) end, "num_chunk_types")
  end)
end)
