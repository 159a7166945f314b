-- Every public function of these modules has an LDoc doc comment with an
-- example (@usage), and `ldoc` renders them without a warning. The first
-- part reads the sources (no tool needed); the second runs ldoc when it is
-- installed (Debian's lua-ldoc and lua-markdown; `make doc` needs them too),
-- through tools/ldoc as `make doc` does.
-- the metatable of an object a control-flow constructor makes, built in a
-- throwaway program: make(module, layers) returns the object
local function built(make)
  return function(m)
    local oar = require("oar")
    return oar.program_guard(oar.Program(), oar.Program(), function()
      return getmetatable(make(m, oar.layers))
    end)
  end
end
local function bool_cond(layers)
  return layers.fill_constant{ shape = { 1 }, dtype = "bool", value = 1 }
end

local CF = "lua/oar/layers/control_flow/"

local MODULES = {
  -- module name, source file(s), classes: {field of the module or a function giving the metatable}
  { "oar.io", "lua/oar/io.lua" },
  -- oar.eager adds the eager methods to Tensor
  { "oar.tensor", { "lua/oar/tensor.lua", "lua/oar/eager.lua", "lua/oar/autograd.lua", "lua/oar/eager_select.lua",
                    "lua/oar/eager_index.lua" },
    { Tensor = function(m) require("oar.eager"); return m.Tensor end } },
  { "oar.eager", { "lua/oar/eager.lua", "lua/oar/autograd.lua", "lua/oar/eager_io.lua", "lua/oar/eager_create.lua",
                  "lua/oar/eager_select.lua", "lua/oar/eager_index.lua" } },
  { "oar.jit", "lua/oar/jit.lua", { Traced = function(m) return m.Traced end } },
  { "oar.nn", { "lua/oar/nn.lua", "lua/oar/nn_rnn.lua" },
    { Module = function(m) return m.Module end, Sequential = function(m) return m.Sequential end,
      functional = function(m) return m.functional end, LSTM = function(m) return m.LSTM end,
      GRU = function(m) return m.GRU end } },
  { "oar.lr_scheduler", "lua/oar/lr_scheduler.lua",
    { Schedule = function(m) return getmetatable(m.cosine_decay(0.1, 2, 3)) end } },
  { "oar.scope", "lua/oar/scope.lua",
    { Scope = function(m) return m.Scope end, ScopeVar = function(m) return m.ScopeVar end } },
  { "oar.place", "lua/oar/place.lua", { Place = function(m) return getmetatable(m.CPUPlace()) end } },
  { "oar.reader", "lua/oar/reader.lua", { Rng = function(m) return getmetatable(m.rng(1)) end } },
  { "oar.data_feeder", "lua/oar/data_feeder.lua", { DataFeeder = function(m) return m.DataFeeder end } },
  { "oar.dataset", "lua/oar/dataset/init.lua" },
  { "oar.dataset.fashion_mnist", "lua/oar/dataset/fashion_mnist.lua" },
  { "oar.dataset.idx", "lua/oar/dataset/idx.lua" },
  { "oar.profiler", "lua/oar/profiler.lua" },
  { "oar.flags", "lua/oar/flags.lua" },
  { "oar.unique_name", "lua/oar/unique_name.lua" },
  { "oar.dtypes", "lua/oar/dtypes.lua" },
  -- oar.framework gathers one module per concept; Variable:astype comes from oar.layers.math
  { "oar.framework", { "lua/oar/framework.lua", "lua/oar/framework/core.lua", "lua/oar/framework/program.lua",
      "lua/oar/framework/block.lua", "lua/oar/framework/attrs.lua", "lua/oar/framework/variable.lua",
      "lua/oar/framework/operator.lua", "lua/oar/framework/text.lua", "lua/oar/layers/math.lua" },
    { Program = function(m) return m.Program end, Block = function(m) return m.Block end,
      Operator = function(m) return m.Operator end, Variable = function(m) return m.Variable end } },
  { "oar.layer_helper", "lua/oar/layer_helper.lua" },
  { "oar.layers.nn", "lua/oar/layers/nn.lua" },
  { "oar.layers.tensor", "lua/oar/layers/tensor.lua" },
  { "oar.layers.loss", "lua/oar/layers/loss.lua" },
  { "oar.layers.learning_rate", "lua/oar/layers/learning_rate.lua" },
  { "oar.layers.math", "lua/oar/layers/math.lua" },
  -- ModelAverage, ExponentialMovingAverage, Lookahead/GradientMerge/RecomputeOptimizer and the eager step live in their own files
  { "oar.optimizer", { "lua/oar/optimizer.lua", "lua/oar/optimizer_wrappers.lua", "lua/oar/recompute.lua", "lua/oar/optimizer_eager.lua" },
    { Optimizer = function(m) return m.Optimizer end } },
  { "oar.optimizer_wrappers", "lua/oar/optimizer_wrappers.lua" },
  { "oar.recompute", "lua/oar/recompute.lua" },
  { "oar.layers.sequence", "lua/oar/layers/sequence.lua" },
  { "oar.layers.sequence_ext", "lua/oar/layers/sequence_ext.lua" },
  { "oar.layers.seq_ctr", "lua/oar/layers/seq_ctr.lua" },
  { "oar.layers.nn_last", "lua/oar/layers/nn_last.lua" },
  { "oar.layers.roi", "lua/oar/layers/roi.lua" },
  { "oar.layers.vision", "lua/oar/layers/vision.lua" },
  { "oar.layers.metric_ext", "lua/oar/layers/metric_ext.lua" },
  { "oar.layers.extra", "lua/oar/layers/extra.lua" },
  { "oar.layers.manip", "lua/oar/layers/manip.lua" },
  { "oar.layers.rearrange", "lua/oar/layers/rearrange.lua" },
  { "oar.layers.rearrange2", "lua/oar/layers/rearrange2.lua" },
  { "oar.layers.linalg2", "lua/oar/layers/linalg2.lua" },
  { "oar.nets", "lua/oar/nets.lua" },
  { "oar.layers.rnn_api", { "lua/oar/layers/rnn_api.lua", "lua/oar/layers/rnn_decode.lua",
      "lua/oar/layers/rnn_lstm.lua" },
    { BeamSearchDecoder = function(m) return m.BeamSearchDecoder end } },
  { "oar.layers.rnn_decode", "lua/oar/layers/rnn_decode.lua",
    { BeamSearchDecoder = function(m) return m.BeamSearchDecoder end } },
  { "oar.layers.rnn_struct", "lua/oar/layers/rnn_struct.lua" },
  { "oar.layers.rnn_lstm", "lua/oar/layers/rnn_lstm.lua" },
  { "oar.input", "lua/oar/input.lua" },
  { "oar.layers.control_flow", { "lua/oar/layers/control_flow.lua", CF .. "arrays.lua", CF .. "while.lua",
      CF .. "switch.lua", CF .. "cond.lua", CF .. "case.lua", CF .. "ifelse.lua", CF .. "static_rnn.lua", CF .. "dynamic_rnn.lua",
      CF .. "print.lua" },
    { While = built(function(m, layers) return m.While(bool_cond(layers)) end),
      ConditionalBlock = built(function(m, layers) return m.ConditionalBlock{ inputs = { bool_cond(layers) } } end),
      Switch = built(function(m) return m.Switch() end),
      IfElse = built(function(m, layers) return m.IfElse(bool_cond(layers)) end),
      StaticRNN = built(function(m) return m.StaticRNN() end),
      DynamicRNN = built(function(m) return m.DynamicRNN() end) } },
  { "oar.backward", "lua/oar/backward.lua" },
  { "oar.initializer", "lua/oar/initializer.lua",
    { Initializer = function(m) return getmetatable(m.Constant()) end } },
  { "oar.param_attr", "lua/oar/param_attr.lua", { ParamAttr = function(m) return m.ParamAttr end } },
  { "oar.clip", "lua/oar/clip.lua", { Clip = function(m) return getmetatable(m.ByNorm(1)) end } },
  { "oar.regularizer", "lua/oar/regularizer.lua",
    { Regularizer = function(m) return getmetatable(m.L2Decay(1)) end } },
  { "oar.executor", "lua/oar/executor.lua", { Executor = function(m) return m.ExecutorClass end } },
  { "oar.fleet", "lua/oar/fleet.lua",
    { DistributedOptimizer = function(m)
        return getmetatable(m.distributed_optimizer(require("oar.optimizer").SGD{ learning_rate = 0.1 }))
      end } },
  { "oar.fleet_checkpoint", "lua/oar/fleet_checkpoint.lua", { Checkpointer = function(m) return m.Checkpointer end } },
  { "oar.fleet_ckpt_files", "lua/oar/fleet_ckpt_files.lua" },
  { "oar.launch", "lua/oar/launch.lua" },
  { "oar.amp", "lua/oar/amp.lua" },
  { "oar.progress", "lua/oar/progress.lua", { Bar = function(m) return m.Bar end } },
  { "oar.summary", "lua/oar/summary.lua" },
  { "oar.plot", "lua/oar/plot.lua" },
  { "oar.metrics", "lua/oar/metrics.lua", { Logger = function(m) return m.Logger end,
                                               ChunkEvaluator = function(m) return m.ChunkEvaluator end,
                                               Accuracy = function(m) return m.Accuracy end,
                                               Auc = function(m) return m.Auc end,
                                               Precision = function(m) return m.Precision end,
                                               Recall = function(m) return m.Recall end,
                                               CompositeMetric = function(m) return m.CompositeMetric end } },
  { "oar.argcheck", "lua/oar/argcheck.lua" },
  { "oar.checkpoint_dir", "lua/oar/checkpoint_dir.lua" },
  { "oar.io_paddle", "lua/oar/io_paddle.lua" },
  -- the oar table's functions are other modules' under a short name, listed in its module comment
  { "oar", "lua/oar/init.lua" },
}

local read = require("spec.helpers.files").read_bytes

-- name -> true for every public function of the module and its classes,
-- as "f" and "Class:f"
local function public_functions(name, classes)
  local m = require(name)
  local out = {}
  for k, v in pairs(m) do
    -- a submodule loaded into its parent's table (oar.dataset.split) has its own page
    local submodule = type(k) == "string" and package.loaded[name .. "." .. k] == v
    if type(v) == "function" and type(k) == "string" and not k:match("^_") and not submodule then
      out[k] = true
    end
  end
  for cname, get in pairs(classes or {}) do
    local class = get(m)
    for k, v in pairs(class) do
      if type(v) == "function" and type(k) == "string" and not k:match("^_") then
        out[cname .. ":" .. k] = true
      end
    end
  end
  return out
end

-- "f" / "Class:f" -> the doc comment block above its definition, or false.
-- Definitions: `function M.f(`, `function Class:f(`, `M.f = ...` (a factory,
-- an alias), `Class.f = function`, and free-standing blocks tagged
-- `@function f` / `@function Class:f` (functions made in a loop).
local function doc_blocks(src, docs)
  docs = docs or {}
  local lines = {}
  for line in (src .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  local function set(key, value)
    if value or docs[key] == nil then docs[key] = value end
  end
  local function block_above(i)
    local j = i - 1
    local block = {}
    while j >= 1 and lines[j]:match("^%s*%-%-") do
      table.insert(block, 1, lines[j])
      j = j - 1
    end
    local first
    for _, l in ipairs(block) do
      if l:match("^%s*%-%-%-") then first = true end
    end
    return first and table.concat(block, "\n") or false
  end
  for i, line in ipairs(lines) do
    local class, sep, fname = line:match("^function ([%w_]+)([%.:])([%w_]+)%s*%(")
    if not class then
      class, fname = line:match("^%s*[%w_.]-([%w_]+)%.([%w_]+)%s*=[^=]")
      sep = "."
    end
    if class then
      local key = (class == "M") and fname or (class .. ":" .. fname)
      local d = block_above(i)
      set(key, d)
      if sep == "." and class ~= "M" then set(class .. "." .. fname, d) end
    end
    local tagged = line:match("^%s*%-%-%s*@function%s+([%w_.:]+)%s*$")
    if tagged then
      -- the block runs from its `---` line to the last comment line below the tag
      local j = i
      while lines[j + 1] and lines[j + 1]:match("^%s*%-%-") and not lines[j + 1]:match("^%s*%-%-%-") do
        j = j + 1
      end
      local d = block_above(j + 1)
      set(tagged, d)
      set(tagged:gsub("^([%w_]+)%.", "%1:"), d)
    end
  end
  return docs
end

local function files_of(spec)
  return type(spec[2]) == "table" and spec[2] or { spec[2] }
end

describe("doc comments", function()
  for _, spec in ipairs(MODULES) do
    local name, classes = spec[1], spec[3]
    local files = files_of(spec)
    it(name .. ": a module comment and every public function documented with an example", function()
      local docs, all = {}, {}
      for _, file in ipairs(files) do
        local src = read(file)
        all[#all + 1] = src
        assert.truthy(src:find("@module [%w_.]+"), file .. " has no '@module' comment")
        doc_blocks(src, docs)
      end
      assert.truthy(all[1]:find("@module " .. name:gsub("%.", "%%.") .. "%f[^%w_.]"),
        files[1] .. " has no '@module " .. name .. "' comment")
      local text = table.concat(all, "\n")
      local missing = {}
      for f in pairs(public_functions(name, classes)) do
        local d = docs[f]
        -- a method may be defined with the class's local name (Tensor:shape),
        -- a module function as a method of the class the module is (LayerHelper:block)
        if d == nil then d = docs[f:gsub("^[%w_]+:", "M.")] end
        -- oar.eager's functions are Tensor's methods too (Tensor:sum is M.sum)
        if d == nil and name == "oar.tensor" then d = docs[(f:gsub("^[%w_]+:", ""))] end
        if d == nil and not f:find("[.:]") then
          for k, v in pairs(docs) do
            if v and (k:match(":" .. f .. "$") or k:match("%." .. f .. "$")) then d = v end
          end
        end
        -- an alias is documented in its original's comment: "(also `top_k`)"
        local short = f:match("[%w_]+$")
        local alias = text:find("[`.:]" .. short .. "`") ~= nil
        if not d and not alias then
          missing[#missing + 1] = f .. " (no --- doc comment)"
        elseif d and not d:find("@usage", 1, true) then
          missing[#missing + 1] = f .. " (no @usage)"
        end
      end
      table.sort(missing)
      assert(#missing == 0, name .. ": " .. table.concat(missing, ", "))
    end)
  end

  -- ldoc runs as `make doc` runs it: tools/ldoc picks a Lua that loads
  -- lua-markdown (Debian's ldoc may otherwise start under lua5.2, which has none)
  local which = io.popen("tools/ldoc --which 2>&1; echo \"exit:$?\"")
  local found = which:read("*a")
  which:close()
  local has_ldoc = found:match("exit:(%d+)%s*$") == "0"
  -- tools/bootstrap installs both: without them the rendering is untested (a failure)
  it("finds ldoc and a Lua with lua-markdown (tools/ldoc)", function()
    assert(has_ldoc, "ldoc and lua-markdown are needed (Debian lua-ldoc, lua-markdown; "
      .. "tools/bootstrap installs them): " .. found)
  end)
  if not has_ldoc then return end

  it("ldoc renders the whole tree (config.ld) without a warning, an anchor per public function", function()
    local dir = os.tmpname()
    os.remove(dir)
    local config = dir .. ".ld"
    local cf = assert(io.open(config, "wb"))
    local pwd = io.popen("pwd")
    local root = pwd:read("*l")
    pwd:close()
    -- config.ld with absolute paths (ldoc changes to the configuration's directory)
    cf:write((read("config.ld")
      :gsub("\nfile%s*=%s*{%s*\"lua/oar\"", "\nfile = { " .. string.format("%q", root .. "/lua/oar"))
      :gsub("\"lua/oar/", (string.format("%q", root .. "/lua/oar/"):sub(1, -2):gsub("%%", "%%%%")))
      :gsub("\ndir%s*=[^\n]*", "\ndir = " .. string.format("%q", dir))))
    cf:close()
    local p = io.popen("tools/ldoc --fatalwarnings -c " .. config .. " . 2>&1; echo \"exit:$?\"")
    local out = p:read("*a")
    p:close()
    local ok = out:match("exit:(%d+)%s*$") == "0"
    local pages = {}
    if ok then
      local ls = io.popen("ls '" .. dir .. "/modules'")
      for f in ls:lines() do
        local h = io.open(dir .. "/modules/" .. f, "rb")
        pages[#pages + 1] = h:read("*a")
        h:close()
      end
      ls:close()
    end
    os.execute("rm -rf '" .. dir .. "'")
    os.remove(config)
    assert(ok, "ldoc failed or warned:\n" .. out)
    assert.falsy(out:find("falling back to text", 1, true), out)
    local html = table.concat(pages, "\n")
    for _, spec in ipairs(MODULES) do
      for f in pairs(public_functions(spec[1], spec[3])) do
        local short = f:match("[%w_]+$")
        assert(html:find('<a name = "' .. f .. '"', 1, true) or html:find('<a name = "' .. f:gsub(":", ".") .. '"', 1, true) or html:find('<a name = "' .. short .. '"', 1, true)
          or html:find('[`.:]' .. short .. '`') or html:find(short .. "</code>", 1, true)
          or html:find('<a name = "[%w_]+[.:]' .. short .. '"'),
          spec[1] .. ": no entry for " .. f)
      end
    end
  end)
end)
