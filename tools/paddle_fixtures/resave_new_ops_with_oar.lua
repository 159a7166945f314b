-- Loads each program of spec/fixtures/paddle_new_ops (pd2 layout) into oar
-- and saves it again with oar (model.pdmodel + model.pdiparams) under
-- OUT_DIR/<model>/; check_new_ops_resaves.py then runs oar's files in Paddle
-- against the fixture's inputs and Paddle's outputs.
--
--   luajit tools/paddle_fixtures/resave_new_ops_with_oar.lua OUT_DIR
-- (from the repository root, with LUA_PATH/LUA_CPATH set as .busted does)
local oar = require("oar")

local OUT = assert(arg[1], "usage: resave_new_ops_with_oar.lua OUT_DIR")
local ROOT = "spec/fixtures/paddle_new_ops"

for line in io.popen("ls " .. ROOT):lines() do
  local exe, scope = oar.Executor(), oar.Scope()
  local prog, feeds, fetches = oar.io.load_inference_model(ROOT .. "/" .. line .. "/pd2/model", exe, { scope = scope })
  local dir = OUT .. "/" .. line
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  oar.io.save_inference_model(dir, feeds, fetches, exe, prog,
    { model_filename = "model.pdmodel", params_filename = "model.pdiparams", scope = scope })
  print("saved " .. dir)
end
