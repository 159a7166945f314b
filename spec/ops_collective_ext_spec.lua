-- c_reducescatter (issue 22): with one worker Out is X; with two workers
-- under mpirun (as spec/fleet_mpi_spec.lua starts them) worker r gets the
-- r-th half of the sum of both workers' X, checked against the sum computed
-- here; errors name the op and the variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")
local C = require("oar.lib").C
local J = require("spec.helpers.mpi_jobs")

describe("c_reducescatter", function()
  for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
    it("one worker: Out is X (" .. dt .. ")", function()
      local x = R.uniform(12, 3, -5, 5)
      if dt:match("int") then for i, v in ipairs(x) do x[i] = math.floor(v) end end
      T.check_output{ type = "c_reducescatter", dtype = dt, attrs = { nranks = 1 },
                      inputs = { X = T.tensor(x, { shape = { 4, 3 }, dtype = dt }) },
                      expect = { Out = { shape = { 4, 3 }, data = x } }, atol = 1e-6 }
    end)
  end

  it("refuses a dim 0 that nranks does not divide, and nranks other than the job's", function()
    expect_error(function()
      T.run{ type = "c_reducescatter", attrs = { nranks = 2 }, inputs = { X = T.tensor(R.uniform(9, 1), { shape = { 3, 3 } }) } }
    end, "c_reducescatter", "in_X", "multiple of nranks 2")
    expect_error(function()
      T.run{ type = "c_reducescatter", attrs = { nranks = 2 }, inputs = { X = T.tensor(R.uniform(12, 1), { shape = { 4, 3 } }) } }
    end, "c_reducescatter", "nranks is 2", "1 workers")
  end)

  describe("two workers (mpirun)", function()
    local why
    if not J.sh_ok("command -v mpirun >/dev/null 2>&1") then why = "mpirun is not installed (openmpi-bin)"
    elseif not C.oar_comm_compiled_with_mpi() then why = "liboar was built without MPI (libopenmpi-dev)" end
    if why then
      -- as spec/fleet_mpi_spec.lua: an untested collective is a failure
      it("needs mpirun and an MPI build", function() error(why) end)
      return
    end

    it("worker r gets the r-th half of the sum, for every dtype", function()
      local script = [[
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        local oar = require("oar")
        oar.fleet.init()
        local rank = oar.fleet.worker_index()
        for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
          local main = oar.Program()
          local block = main:global_block()
          local x = block:create_var{ name = "x", shape = { 4, 3 }, dtype = dt }
          local y = block:create_var{ name = "y", shape = { 2, 3 }, dtype = dt }
          block:append_op{ type = "c_reducescatter", inputs = { X = { x } }, outputs = { Out = { y } },
                           attrs = { ring_id = 0, nranks = 2 } }
          local v = {}
          for i = 0, 11 do v[#v + 1] = (i - 3) * (rank + 1) + rank end
          local exe = oar.Executor(oar.CPUPlace())
          local got = exe:run(main, { feed = { x = oar.tensor.new(v, dt):reshape({ 4, 3 }) }, fetch_list = { y } })[1]
          local flat = {}
          for _, row in ipairs(got:totable()) do for _, e in ipairs(row) do flat[#flat + 1] = e end end
          print(("rank %d %s %s"):format(rank, dt, table.concat(flat, " ")))
        end
      ]]
      local path = J.tmpbase() .. ".lua"
      local f = assert(io.open(path, "w"))
      f:write(script)
      f:close()
      local ok, out = J.run(J.MPIRUN .. "luajit " .. path)
      os.remove(path)
      assert(ok, out)
      for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
        for r = 0, 1 do
          local want = {}
          for i = r * 6, r * 6 + 5 do want[#want + 1] = ((i - 3) * 1 + 0) + ((i - 3) * 2 + 1) end
          local line = out:match(("rank %d %s ([^\n]*)"):format(r, dt))
          assert(line, "no line for rank " .. r .. " " .. dt .. " in:\n" .. out)
          local got = {}
          for v in line:gmatch("%S+") do got[#got + 1] = tonumber(v) end
          assert.are.same(want, got)
        end
      end
    end)
  end)
end)
