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
M.MODELS = { "mlp", "lenet", "mixed", "scalar_out", "bow", "nn_ops", "lstm", "gru", "jit_mlp", "pir_mlp", "pir_lenet",
  "pir_convnet" }

-- A fixture's layouts need ops or op changes that oar may not have yet; a
-- spec for such a layout is pending (naming them) until they are there.
local function dispensable(op, slot) return bit.band(C.oar_op_output_flags(op, slot), 2) ~= 0 end
local function registered(op) return C.oar_op_is_registered(op) end
-- ops each fixture needs that oar may lack (every layout of it)
local NEEDS_OPS = {
  jit_mlp = { "matmul_v2" },
  pir_mlp = { "matmul_v2" },
  pir_lenet = { "flatten_contiguous_range", "matmul_v2" },
  bow = { "lookup_table_v2" },
  nn_ops = { "slice", "expand_v2", "hard_swish", "flatten_contiguous_range" },
}
-- layouts that need more than ops
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
}

-- nil when the layout can run here, else what it still needs
function M.missing(model, layout)
  local missing = {}
  for _, op in ipairs(NEEDS_OPS[model] or {}) do
    if not registered(op) then missing[#missing + 1] = op end
  end
  if #missing > 0 then return "op" .. (#missing > 1 and "s " or " ") .. table.concat(missing, ", ") end
  local need = NEEDS[model .. "/" .. layout]
  local r = need and need()
  if r and r ~= true then return r end
  return nil
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
