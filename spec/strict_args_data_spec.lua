-- Unknown keyword arguments are refused, with the closest valid name, in
-- oar.io, oar.Tensor, the reader decorators, the data feeder, the data sets,
-- the flags and the profiler; Tensor:item(); the profiler's report.
local oar = require("oar")
local layers = oar.layers
local expect_error = require("spec.helpers.expect_error")
local tmpdir = require("spec.helpers.files").tmpdir

-- a program with one fc layer, initialized in its own scope
local function small_model()
  local main, startup = oar.Program(), oar.Program()
  local x, y
  oar.program_guard(main, startup, function()
    x = layers.data{ name = "x", shape = { 3 } }
    y = layers.fc{ input = x, size = 2 }
  end)
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(startup, { scope = scope })
  return { main = main, exe = exe, scope = scope, x = x, y = y }
end

local HERE = "spec/strict_args_data_spec.lua:"

describe("strict arguments", function()
  describe("oar.io", function()
    local m, dir
    before_each(function()
      m = small_model()
      dir = tmpdir()
    end)
    after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

    it("refuses an unknown option after the positional arguments, located at the caller's line", function()
      local msg = expect_error(function() oar.io.save_params(m.exe, dir, m.main, { filenme = "all" }) end,
        "oar.io.save_params: unknown argument 'filenme' (did you mean 'filename'?)")
      assert.truthy(msg:find(HERE, 1, true), msg)
      expect_error(function() oar.io.load_persistables(m.exe, dir, m.main, "all", { scoep = m.scope }) end,
        "oar.io.load_persistables: unknown argument 'scoep' (did you mean 'scope'?)")
      expect_error(function()
        oar.io.save_vars(m.exe, dir, m.main, function() return true end, { filname = "x" })
      end, "oar.io.save_vars: unknown argument 'filname' (did you mean 'filename'?)")
    end)

    it("refuses an unknown key of the keyword-table form", function()
      expect_error(function() oar.io.save_persistables{ executor = m.exe, dirnam = dir } end,
        "oar.io.save_persistables: unknown argument 'dirnam' (did you mean 'dirname'?)")
      expect_error(function() oar.io.load_vars{ executor = m.exe, dirname = dir, var = { m.y } } end,
        "oar.io.load_vars: unknown argument 'var' (did you mean 'vars'?)")
      expect_error(function()
        oar.io.save_inference_model{ dirname = dir, feeded_var_names = { "x" }, target_vars = { m.y },
          executor = m.exe, main_program = m.main, param_filename = "p" }
      end, "oar.io.save_inference_model: unknown argument 'param_filename' (did you mean 'params_filename'?)")
      expect_error(function() oar.io.load_inference_model{ dirname = dir, executr = m.exe } end,
        "oar.io.load_inference_model: unknown argument 'executr' (did you mean 'executor'?)")
    end)

    it("refuses an unknown option of the inference model functions", function()
      expect_error(function()
        oar.io.save_inference_model(dir, { "x" }, { m.y }, m.exe, m.main, { model_file = "m" })
      end, "unknown argument 'model_file' (did you mean 'model_filename'?)")
      expect_error(function() oar.io.load_inference_model(dir, m.exe, { scope = m.scope, sope = 1 }) end,
        "oar.io.load_inference_model: unknown argument 'sope' (did you mean 'scope'?)")
    end)

    it("writes nothing when an option is unknown, and still takes the valid ones", function()
      pcall(oar.io.save_params, m.exe, dir, m.main, { filenme = "all", scope = m.scope })
      local f = io.open(dir .. "/fc_0.w_0", "rb") or io.open(dir .. "/all", "rb")
      assert.is_nil(f)
      oar.io.save_params(m.exe, dir, m.main, { filename = "all", scope = m.scope })
      local scope = oar.Scope()
      oar.io.load_params{ executor = m.exe, dirname = dir, main_program = m.main, filename = "all", scope = scope }
      local w
      for _, n in ipairs(m.scope:local_var_names()) do if n:match("%.w_0$") then w = n end end
      assert.truthy(w)
      assert.same(m.scope:find_var(w):get_tensor():totable(), scope:find_var(w):get_tensor():totable())
    end)
  end)

  describe("oar.Tensor", function()
    it("refuses an unknown option", function()
      expect_error(function() oar.Tensor{ shpe = { 2, 3 } } end,
        "oar.Tensor: unknown argument 'shpe' (did you mean 'shape'?)")
      expect_error(function() oar.Tensor{ shape = { 2 }, dtyp = "int64" } end,
        "oar.Tensor: unknown argument 'dtyp' (did you mean 'dtype'?)")
    end)

    it("asks for a shape when an options table has none", function()
      expect_error(function() oar.Tensor{ dtype = "int64" } end, "oar.Tensor", "needs 'shape'")
    end)

    it("refuses two different dtypes, accepts the same one twice", function()
      expect_error(function() oar.Tensor({ shape = { 2 }, dtype = "int64" }, "float32") end,
        "dtype 'int64' in the table but 'float32'")
      assert.equal("int64", oar.Tensor({ shape = { 2 }, dtype = "int64" }, "long"):dtype())
    end)

    it("still takes nested values, options with lod, and a Tensor is not silently copied", function()
      assert.same({ 2, 2 }, oar.Tensor({ { 1, 2 }, { 3, 4 } }):shape())
      local t = oar.Tensor{ shape = { 5, 1 }, lod = { { 0, 2, 5 } } }
      assert.same({ { 0, 2, 5 } }, t:lod())
      expect_error(function() oar.Tensor(t) end, "use t:clone()")
    end)
  end)

  describe("Tensor:item()", function()
    it("gives the number of a one-element tensor of any rank and dtype", function()
      assert.equal(2.5, oar.Tensor({ 2.5 }):item())
      assert.equal(-7, oar.Tensor({ { { -7 } } }, "int64"):item())
      assert.equal(true, oar.Tensor({ true }, "bool"):item())
      assert.equal(0, oar.Tensor{ shape = { 1, 1 }, dtype = "float64" }:item())
      local half = oar.Tensor({ 0.5 }, "float16")
      assert.equal(0.5, half:item())
    end)

    it("reads a fetched loss", function()
      local m = small_model()
      local loss
      oar.program_guard(m.main, oar.Program(), function() loss = layers.mean(m.y) end)
      local out = m.exe:run(m.main, { feed = { x = { { 1, 2, 3 } } }, fetch_list = { loss }, scope = m.scope })
      local y = out[1]
      assert.equal("number", type(y:item()))
      assert.equal(y:get(1), y:item())
    end)

    it("refuses several or no elements, and a '.' call", function()
      expect_error(function() oar.Tensor({ 1, 2 }):item() end, "Tensor:item", "2 elements", "shape [2]")
      expect_error(function() oar.Tensor{ shape = { 0, 3 } }:item() end, "Tensor:item", "0 elements")
      expect_error(function() oar.Tensor({ 1 }).item() end, "Tensor:item", "':'")
    end)
  end)

  describe("readers, feeder, data sets", function()
    local function numbers()
      local i = 0
      return function()
        i = i + 1
        if i <= 3 then return { i } end
      end
    end

    it("oar.reader.compose refuses an unknown option", function()
      expect_error(function() oar.reader.compose(numbers, numbers, { check_alignmnt = false }) end,
        "oar.reader.compose: unknown argument 'check_alignmnt' (did you mean 'check_alignment'?)")
      local n = 0
      for s in oar.reader.compose(numbers, numbers, { check_alignment = false })() do
        n = n + 1
        assert.same({ n, n }, s)
      end
      assert.equal(3, n)
    end)

    it("oar.DataFeeder refuses unknown keys of its table and of a slot table", function()
      expect_error(function() oar.DataFeeder{ feed_lst = { "x" } } end,
        "oar.DataFeeder: unknown argument 'feed_lst' (did you mean 'feed_list'?)")
      expect_error(function() oar.DataFeeder{ feed_list = { { name = "x", shape = { -1, 2 }, lod_levl = 1 } } } end,
        "feed_list[1]: unknown argument 'lod_levl' (did you mean 'lod_level'?)")
      local feeder = oar.DataFeeder{ feed_list = { { name = "x", shape = { -1, 2 } } } }
      assert.same({ { 1, 2 }, { 3, 4 } }, feeder:feed({ { { 1, 2 } }, { { 3, 4 } } }).x:totable())
    end)

    it("the data sets refuse unknown options", function()
      local fm = oar.dataset.fashion_mnist
      expect_error(function() fm.batches("test", 10, { shufle = true }) end,
        "oar.dataset.fashion_mnist.batches: unknown argument 'shufle' (did you mean 'shuffle'?)")
      expect_error(function() fm.load("test", { max_item = 5 }) end,
        "oar.dataset.fashion_mnist.load: unknown argument 'max_item' (did you mean 'max_items'?)")
      expect_error(function() fm.train({ datadir = "/nowhere" }) end,
        "oar.dataset.fashion_mnist.train: unknown argument 'datadir' (did you mean 'data_dir'?)")
      local dir = tmpdir()
      os.execute("mkdir '" .. dir .. "'")
      local path = dir .. "/labels"
      oar.dataset.idx.write(path, { 3 }, { 1, 2, 3 })
      expect_error(function() oar.dataset.idx.read(path, { magik = 2049 }) end,
        "oar.dataset.idx.read: unknown argument 'magik' (did you mean 'magic'?)")
      assert.equal(3, oar.dataset.idx.read(path, { ndim = 1 }).count)
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end)

  describe("flags", function()
    it("refuses an unknown flag with a suggestion and changes nothing", function()
      local before = oar.get_flags("check_nan_inf").check_nan_inf
      expect_error(function() oar.set_flags{ check_nan_inf = 1 - before, num_thread = 2 } end,
        "oar.set_flags: unknown flag 'num_thread' (did you mean 'num_threads'?)")
      assert.equal(before, oar.get_flags("check_nan_inf").check_nan_inf)
      expect_error(function() oar.get_flags("FLAGS_chek_nan_inf") end,
        "oar.get_flags: unknown flag 'chek_nan_inf' (did you mean 'check_nan_inf'?)")
    end)

    it("takes Fluid's FLAGS_ prefix", function()
      local n = oar.get_flags("num_threads").num_threads
      oar.set_flags{ FLAGS_num_threads = n }
      assert.equal(n, oar.get_flags({ "FLAGS_num_threads" }).FLAGS_num_threads)
    end)
  end)

  describe("oar.profiler", function()
    it("reports the ops run while it records, and refuses stray arguments", function()
      local m = small_model()
      local report = oar.profiler.profile(function()
        for _ = 1, 3 do m.exe:run(m.main, { feed = { x = { { 1, 2, 3 } } }, scope = m.scope }) end
      end)
      local mul_calls = report:match("\nmul%s+(%d+)")
      assert.equal("3", mul_calls, report)
      assert.truthy(report:find("\ntotal", 1, true), report)
      assert.equal(0, oar.get_flags("profile").profile)
      expect_error(function() oar.profiler.start{ sort = "calls" } end, "oar.profiler.start: takes no arguments")
      expect_error(function() oar.profiler.profile(function() end, 1) end, "oar.profiler.profile")
      expect_error(function() oar.profiler.profile(function() error("inside") end) end, "inside")
      assert.equal(0, oar.get_flags("profile").profile)
    end)
  end)
end)
