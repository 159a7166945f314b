-- spec/helpers/paddle_fixtures.lua — the models PaddlePaddle 2.6 and 3.3 wrote
-- under spec/fixtures/paddle/ (tools/paddle_fixtures/gen_paddle{2,3}.py): each
-- with its manifest (layouts, inputs, Paddle's outputs) and tensor files.
local ffi = require("ffi")
local lib = require("oar.lib")
local tensor = require("oar.tensor")
local F = require("spec.helpers.files")
local C = lib.C

local M = {}

M.ROOT = "spec/fixtures/paddle"
M.MODELS = { "mlp", "lenet", "mixed", "scalar_out", "lstm", "gru", "jit_mlp", "pir_mlp", "pir_lenet", "pir_convnet" }

-- A fixture's layouts need ops or op changes that oar may not have yet; a
-- spec for such a layout is pending (naming them) until they are there.
local function dispensable(op, slot) return bit.band(C.oar_op_output_flags(op, slot), 2) ~= 0 end
local function registered(op) return C.oar_op_is_registered(op) end
local NEEDS = {
  ["lstm/pd2"] = function()
    return dispensable("lstm", "BatchGate") and dispensable("lstm", "BatchCellPreAct") or
      "lstm's BatchGate/BatchCellPreAct outputs made dispensable (Paddle's save_inference_model removes them)"
  end,
  ["gru/pd2"] = function()
    return dispensable("gru", "BatchGate") and dispensable("gru", "BatchResetHiddenPrev") and
      dispensable("gru", "BatchHidden") or
      "gru's BatchGate/BatchResetHiddenPrev/BatchHidden outputs made dispensable (Paddle's save_inference_model " ..
      "removes them)"
  end,
  ["jit_mlp/jit"] = function() return registered("matmul_v2") or "op matmul_v2" end,
  ["pir_mlp/pir"] = function() return registered("matmul_v2") or "op matmul_v2" end,
  ["pir_lenet/pir"] = function()
    local missing = {}
    for _, op in ipairs({ "flatten_contiguous_range", "matmul_v2" }) do
      if not registered(op) then missing[#missing + 1] = op end
    end
    return #missing == 0 or "ops " .. table.concat(missing, ", ")
  end,
}

-- nil when the layout can run here, else what it still needs
function M.missing(model, layout)
  local need = NEEDS[model .. "/" .. layout]
  if not need then return nil end
  local r = need()
  if r == true then return nil end
  return r
end

-- A Tensor from a file holding one LoDTensor record.
function M.read_tensor(path)
  local s = F.read_bytes(path)
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_deserialize(s, #s, nil, out) ~= 0 then error(path .. ": " .. lib.last_error()) end
  return tensor.wrap(out[0])
end

-- {dir=, inputs={{name, Tensor}...}, outputs={Tensor...}, layouts={{name=, model=, params=}...}}
function M.load(model)
  local dir = M.ROOT .. "/" .. model
  local fx = { name = model, dir = dir, inputs = {}, outputs = {}, layouts = {} }
  for line in io.lines(dir .. "/manifest.txt") do
    local kind, a, b, c = line:match("^(%S+) (%S+) ?(%S*) ?(%S*)$")
    if kind == "input" then
      fx.inputs[#fx.inputs + 1] = { a, M.read_tensor(dir .. "/" .. b), file = dir .. "/" .. b }
    elseif kind == "output" then
      fx.outputs[tonumber(a) + 1] = M.read_tensor(dir .. "/" .. b)
    elseif kind == "layout" then
      local l = { name = a, model = dir .. "/" .. a .. "/" .. b }
      if c ~= "-" then l.params = dir .. "/" .. a .. "/" .. c end
      -- what a user hands load_inference_model: the directory, or the prefix
      l.path = b == "__model__" and dir .. "/" .. a or l.model:gsub("%.[^./]+$", "")
      fx.layouts[#fx.layouts + 1] = l
    end
  end
  return fx
end

-- largest |got - want| over two tensors of the same shape (asserted)
function M.max_diff(got, want, what)
  local gs, ws = got:shape(), want:shape()
  assert(#gs == #ws, string.format("%s: rank %d, Paddle's is %d", what, #gs, #ws))
  for i = 1, #ws do assert(gs[i] == ws[i], string.format("%s: dim %d is %d, Paddle's %d", what, i, gs[i], ws[i])) end
  local g, w = got:data(), want:data()
  local worst = 0
  for k = 0, want:numel() - 1 do
    local d = math.abs(tonumber(g[k]) - tonumber(w[k]))
    if d ~= d then d = math.huge end
    if d > worst then worst = d end
  end
  return worst
end

return M
