-- bench/serve_mlp.lua DIR: the benchmark MLP (784-512-256-10, relu, softmax:
-- the MNIST MLP of bench/RESULTS.md) with seeded random weights, saved by
-- save_inference_model to DIR/mlp for `oar serve`, and its weights as raw
-- float32 files (DIR/weights/NAME.bin, shapes in DIR/weights/shapes.txt:
-- "NAME d0 d1 ...") so that a peer server can serve the same function.
local oar = require("oar")
local layers = oar.layers
local dir = assert(arg[1], "usage: oar bench/serve_mlp.lua DIR")

local main, startup = oar.Program(), oar.Program()
local out
oar.program_guard(main, startup, function()
  local x = layers.data{ name = "x", shape = { 784 } }
  local h = layers.fc{ input = x, size = 512, act = "relu" }
  h = layers.fc{ input = h, size = 256, act = "relu" }
  out = layers.fc{ input = h, size = 10, act = "softmax" }
end)
local exe, scope = oar.Executor(), oar.Scope()
oar.seed(7)
exe:run(startup, { scope = scope })
oar.io.save_inference_model(dir .. "/mlp", { "x" }, { out }, exe, main, { scope = scope })

assert(os.execute("mkdir -p '" .. dir .. "/weights'") == 0)
local shapes = assert(io.open(dir .. "/weights/shapes.txt", "w"))
for _, name in ipairs({ "fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0", "fc_2.w_0", "fc_2.b_0" }) do
  local t = scope:find_var(name):get_tensor()
  local f = assert(io.open(dir .. "/weights/" .. name .. ".bin", "wb"))
  f:write(require("ffi").string(t:data(), t:numel() * 4))
  f:close()
  shapes:write(name, " ", table.concat(t:shape(), " "), "\n")
end
shapes:close()
