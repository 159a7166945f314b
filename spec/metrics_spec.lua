-- oar.metrics: CSV and JSON Lines logs, byte for byte, read back exactly.
local oar = require("oar")
local F = require("spec.helpers.files")

describe("oar.metrics", function()
  local dir
  before_each(function()
    dir = F.tmpdir()
    os.execute("mkdir -p '" .. dir .. "'")
  end)
  after_each(function() F.rmtree(dir) end)

  it("writes a CSV log with the first row's keys as header (epoch, step first) and reads it back", function()
    local file = dir .. "/run.csv"
    local log = oar.metrics.logger{ file = file }
    log:log{ loss = 0.5, step = 10, epoch = 1, acc = 0.25 }
    log:log{ step = 20, epoch = 1, loss = 0.1 + 0.2 }    -- acc missing: an empty cell
    log:log{ step = 30, epoch = 2, loss = 0 / 0, acc = 1 / 0 }
    log:close()
    assert.are.equal("epoch,step,acc,loss\n" ..
                     "1,10,0.25,0.5\n" ..
                     "1,20,,0.30000000000000004\n" ..
                     "2,30,inf,nan\n", F.read_bytes(file))
    local run = oar.metrics.read(file)
    assert.are.same({ "epoch", "step", "acc", "loss" }, run.names)
    assert.are.equal(3, run.n)
    assert.are.same({ 1, 1, 2 }, run.columns.epoch)
    assert.are.equal(0.1 + 0.2, run.columns.loss[2])   -- exactly
    assert.is_nil(run.columns.acc[2])
    assert.are.equal(math.huge, run.columns.acc[3])
    assert.is_true(run.columns.loss[3] ~= run.columns.loss[3])
    local xs, ys = oar.metrics.series(run, "step", "acc")
    assert.are.same({ 10, 30 }, xs)
    assert.are.same({ 0.25, math.huge }, ys)
  end)

  it("keeps given columns in order, quotes text cells, and appends to an existing log", function()
    local file = dir .. "/run.csv"
    local log = oar.metrics.logger{ file = file, columns = { "step", "note", "loss" } }
    log:log{ step = 1, note = 'a "b", c', loss = 2 }
    log:close()
    log = oar.metrics.logger{ file = file, append = true }
    log:log{ step = 2, loss = 1.5, note = "plain" }
    log:close()
    assert.are.equal('step,note,loss\n1,"a ""b"", c",2\n2,plain,1.5\n', F.read_bytes(file))
    local run = oar.metrics.read(file)
    assert.are.same({ 'a "b", c', "plain" }, run.columns.note)
    assert.are.same({ 2, 1.5 }, run.columns.loss)
  end)

  it("refuses a new column after the CSV header, suggesting the close one", function()
    local log = oar.metrics.logger{ file = dir .. "/run.csv" }
    log:log{ step = 1, loss = 1 }
    local ok, err = pcall(log.log, log, { step = 2, los = 1 })
    assert.is_false(ok)
    assert.truthy(err:find("'los' is not a column", 1, true))
    assert.truthy(err:find("did you mean 'loss'", 1, true))
    assert.truthy(err:find("columns={...}", 1, true))
    log:close()
    assert.has_error(function() log:log{ step = 3 } end)
  end)

  it("writes JSON Lines with any keys per row and reads them back", function()
    local file = dir .. "/run.jsonl"
    local log = oar.metrics.logger{ file = file }
    log:log{ epoch = 1, step = 5, loss = 0.75 }
    log:log{ epoch = 1, step = 10, val_acc = 0.5, tag = "end" }
    log:close()
    assert.are.equal('{"epoch":1,"step":5,"loss":0.75}\n' ..
                     '{"epoch":1,"step":10,"tag":"end","val_acc":0.5}\n', F.read_bytes(file))
    local run = oar.metrics.read(file)
    assert.are.same({ "epoch", "step", "loss", "tag", "val_acc" }, run.names)
    assert.are.equal(2, run.n)
    assert.are.same({ 5, 10 }, run.columns.step)
    assert.are.equal(0.75, run.columns.loss[1])
    assert.is_nil(run.columns.loss[2])
    assert.are.equal("end", run.columns.tag[2])
  end)

  it("explains misuse", function()
    local ok, err = pcall(function() oar.metrics.logger{ fiel = "x.csv" } end)
    assert.is_false(ok)
    assert.truthy(err:find("metrics_spec.lua:%d+: oar.metrics.logger: unknown argument 'fiel' %(did you mean 'file'%?%)"))
    assert.has_error(function() oar.metrics.logger{ file = dir .. "/run.txt" } end,
      "oar.metrics.logger: cannot tell the format of '" .. dir .. "/run.txt': name it .csv or .jsonl, or pass format=\"csv\"|\"jsonl\"")
    local log = oar.metrics.logger{ file = dir .. "/run.csv" }
    assert.has_error(function() log:log{ loss = {} } end)
    log:close()
    assert.has_error(function() oar.metrics.read(dir .. "/absent.csv") end)
    local run = { names = { "loss" }, n = 0, columns = { loss = {} } }
    local ok2, err2 = pcall(oar.metrics.series, run, nil, "los")
    assert.is_false(ok2)
    assert.truthy(err2:find("did you mean 'loss'", 1, true))
  end)
end)
