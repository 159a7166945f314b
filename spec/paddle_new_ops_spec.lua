-- Fluid-style programs over the ops oar added last (conv3d/pool3d,
-- trilinear/bicubic interp, affine_grid/grid_sampler, unique, unstack,
-- flip, roll, tril_triu, kron, cross, bmm, dot, addmm, index_sample,
-- huber/kldiv/log loss, label_smooth, lrn, maxout, temporal_shift, unfold),
-- linear_chain_crf + crf_decoding over LoD input and over padded input with
-- Length, and beam_search inside a
-- While over tensor arrays + beam_search_decode: built and saved by
-- PaddlePaddle 2.6.2 with its outputs for fixed inputs
-- (tools/paddle_fixtures/gen_paddle2_ops.py, spec/fixtures/paddle_new_ops),
-- loaded and run by oar, which must give Paddle's outputs. No Paddle here.
local oar = require("oar")
local PF = require("spec.helpers.paddle_fixtures")
local F = require("spec.helpers.files")

local ROOT = "spec/fixtures/paddle_new_ops"
local RTOL = 1e-5   -- float32: |oar - Paddle| <= RTOL * max(1, |Paddle|)

-- {dir=, inputs={{name, Tensor}...}, outputs={Tensor...}, layouts={{name=, dir=, model=, params=}...}}
local function load_fixture(model)
  local dir = ROOT .. "/" .. model
  local fx = { dir = dir, inputs = {}, outputs = {}, layouts = {} }
  for line in io.lines(dir .. "/manifest.txt") do
    local kind, a, b, c = line:match("^(%S+) (%S+) ?(%S*) ?(%S*)$")
    if kind == "input" then
      fx.inputs[#fx.inputs + 1] = { a, PF.read_tensor(dir .. "/" .. b) }
    elseif kind == "output" then
      fx.outputs[tonumber(a) + 1] = PF.read_tensor(dir .. "/" .. b)
    elseif kind == "layout" then
      fx.layouts[#fx.layouts + 1] = { name = a, dir = dir .. "/" .. a, model = b, params = c ~= "-" and c or nil }
    end
  end
  return fx
end

local function run(fx, layout)
  local exe, scope = oar.Executor(), oar.Scope()
  local prog, feeds, fetches
  if layout.model == "__model__" then
    prog, feeds, fetches = oar.io.load_inference_model(layout.dir, exe,
      { model_filename = layout.model, params_filename = layout.params, scope = scope })
  else
    prog, feeds, fetches = oar.io.load_inference_model(layout.dir .. "/" .. layout.model:gsub("%.pdmodel$", ""), exe,
      { scope = scope })
  end
  local feed = {}
  for _, inp in ipairs(fx.inputs) do feed[inp[1]] = inp[2] end
  assert.equal(#fx.inputs, #feeds)
  return exe:run(prog, { feed = feed, fetch_list = fetches, scope = scope })
end

-- outputs whose shape oar gives as Fluid 1.8 does where Paddle 2.x changed
-- it (the values are compared all the same): fixture output -> {oar's shape, why}
local FLUID18_SHAPES = {
  ["tensor_ops (pd2) output 9"] = { { 2, 1 }, "dot of 2-D [N, D] inputs: Fluid 1.8 gives [N, 1], Paddle 2.x [N]" },
}

local function check(got, fx, what)
  assert.equal(#fx.outputs, #got, what .. ": number of outputs")
  for i, want in ipairs(fx.outputs) do
    local g = got[i]
    local w_out = what .. " output " .. (i - 1)
    local gs, ws = g:shape(), want:shape()
    local known = FLUID18_SHAPES[w_out]
    if known then
      assert.same(known[1], gs, w_out .. ": shape (" .. known[2] .. ")")
    elseif not (#ws == 0 and #gs == 1 and gs[1] == 1) then
      assert.same(ws, gs, w_out .. ": shape")
    end
    assert.same(want:lod(), g:lod(), w_out .. ": LoD")
    local gd, wd = g:data(), want:data()
    for k = 0, want:numel() - 1 do
      local a, b = tonumber(gd[k]), tonumber(wd[k])
      local ok = math.abs(a - b) <= RTOL * math.max(1, math.abs(b))
      assert(ok, string.format("%s[%d]: oar %.9g, Paddle %.9g", w_out, k, a, b))
    end
  end
end

describe("Fluid-style programs PaddlePaddle 2.6 saved over the new ops", function()
  for _, model in ipairs({ "volumes", "tensor_ops", "losses", "images", "crf", "crf_padded", "beam_search" }) do
    local fx = load_fixture(model)
    for _, layout in ipairs(fx.layouts) do
      local what = model .. " (" .. layout.name .. ")"
      it(what .. " loads and gives Paddle's outputs", function()
        check(run(fx, layout), fx, what)
      end)
    end
  end

  it("load, are saved again by oar and give Paddle's outputs from oar's files", function()
    for _, model in ipairs({ "volumes", "tensor_ops", "losses", "images", "crf", "crf_padded", "beam_search" }) do
      local fx = load_fixture(model)
      local exe, scope = oar.Executor(), oar.Scope()
      local prog, feeds, fetches = oar.io.load_inference_model(fx.dir .. "/pd2/model", exe, { scope = scope })
      local dir = F.tmpdir()
      oar.io.save_inference_model(dir, feeds, fetches, exe, prog,
        { model_filename = "model.pdmodel", params_filename = "model.pdiparams", scope = scope })
      local ok, err = pcall(function()
        check(run(fx, { dir = dir, model = "model.pdmodel" }), fx, model .. " (pd2)")
      end)
      F.rmtree(dir)
      assert(ok, err)
    end
  end)

  it("beam_search's decoded sentences are Paddle's: two levels of LoD, one sentence per beam", function()
    local fx = load_fixture("beam_search")
    local got = run(fx, fx.layouts[1])
    local lod = got[1]:lod()
    assert.equal(2, #lod)
    assert.same({ 0, 2, 4, 6 }, lod[1])   -- 3 sources, beam 2
    assert.same(fx.outputs[2]:lod(), got[2]:lod())
  end)
end)
