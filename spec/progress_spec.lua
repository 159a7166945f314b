-- oar.progress: the exact lines a non-terminal gets (one per tenth), the
-- redrawn terminal line, rate/elapsed/ETA from an injected clock, and strict
-- arguments.
local oar = require("oar")

-- A stream that keeps what is written.
local function sink()
  local s = { parts = {} }
  function s:write(...) for _, p in ipairs({ ... }) do self.parts[#self.parts + 1] = p end end
  function s:text() return table.concat(self.parts) end
  return s
end

-- A clock the spec moves by hand.
local function fake_clock()
  local c = { t = 100 }
  c.fn = function() return c.t end
  return c
end

local function lines(text)
  local out = {}
  for l in text:gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

describe("oar.progress", function()
  it("is reachable as oar.progress and as require('oar.progress')", function()
    assert.are.equal(require("oar.progress"), oar.progress)
  end)

  it("prints exactly one line per tenth on a non-terminal, with rate, elapsed time and ETA", function()
    local out, clock = sink(), fake_clock()
    local bar = oar.progress{ total = 938, title = "mlp epoch 1/2", stream = out, clock = clock.fn }
    for i = 1, 938 do
      clock.t = clock.t + 0.01            -- 100 batches a second
      bar:update(i, { loss = 1 / i, acc = 0.5 })
    end
    local dt = bar:finish()
    assert.is_true(math.abs(dt - 9.38) < 1e-9)
    local got = lines(out:text())
    assert.are.equal(10, #got)
    -- the first count reaching each tenth: ceil(938 * k / 10)
    local expected_n = { 94, 188, 282, 376, 469, 563, 657, 751, 845, 938 }
    for k = 1, 10 do
      local n = expected_n[k]
      local elapsed = n * 0.01
      local eta = (938 - n) / 100
      local function mmss(s) s = math.floor(s + 0.5) return string.format("%02d:%02d", math.floor(s / 60), s % 60) end
      local want = string.format("mlp epoch 1/2 %3d%% %d/938 100.0 it/s elapsed %s eta %s acc 0.5000 loss %.4f",
        10 * k, n, mmss(elapsed), mmss(eta), 1 / n)
      assert.are.equal(want, got[k])
    end
    assert.is_nil(out:text():find("\r", 1, true))
  end)

  it("prints a closing line when the loop stops before the total", function()
    local out, clock = sink(), fake_clock()
    local bar = oar.progress{ total = 100, stream = out, clock = clock.fn, unit = "batch" }
    for i = 1, 25 do clock.t = clock.t + 0.5 bar:update(i) end
    bar:finish()
    assert.are.same({
      " 10% 10/100 2.0 batch/s elapsed 00:05 eta 00:45",
      " 20% 20/100 2.0 batch/s elapsed 00:10 eta 00:40",
      " 25% 25/100 2.0 batch/s elapsed 00:13 eta 00:38",
    }, lines(out:text()))
  end)

  it("shows each tenth once when updates jump over several", function()
    local out = sink()
    local bar = oar.progress{ total = 3, stream = out, clock = function() return 0 end }
    bar:update(1) bar:update(2) bar:update(3)
    bar:finish()
    local got = lines(out:text())
    assert.are.equal(3, #got)
    assert.truthy(got[1]:match("^ 33%% 1/3 "))
    assert.truthy(got[2]:match("^ 66%% 2/3 "))
    assert.truthy(got[3]:match("^100%% 3/3 "))
  end)

  it("redraws one line in place on a terminal and ends it on finish", function()
    local out, clock = sink(), fake_clock()
    local bar = oar.progress{ total = 4, title = "t", width = 8, stream = out, tty = true, clock = clock.fn }
    clock.t = clock.t + 1 bar:update(1, { loss = 2 })
    clock.t = clock.t + 1 bar:update(2, { loss = 1.5 })
    clock.t = clock.t + 0.01 bar:update(3, { loss = 1.25 })  -- within min_interval: not drawn
    clock.t = clock.t + 0.99 bar:update(4, { loss = 1 })
    bar:finish()
    local text = out:text()
    local draws = {}
    for d in text:gmatch("\r([^\r]*)\27%[K") do draws[#draws + 1] = d end
    assert.are.same({
      "t [==>     ] 1/4  25% 1.0 it/s 00:01<00:03 loss 2",
      "t [====>   ] 2/4  50% 1.0 it/s 00:02<00:02 loss 1.5000",
      "t [========] 4/4 100% 1.3 it/s 00:03<00:00 loss 1",
      "t [========] 4/4 100% 1.3 it/s 00:03<00:00 loss 1",
    }, draws)
    assert.are.equal("\n", text:sub(-1))
  end)

  it("formats long runs as h:mm:ss", function()
    assert.are.equal("1:01:05", oar.progress.duration(3665))
    assert.are.equal("00:59", oar.progress.duration(59.4))
    assert.are.equal("--:--", oar.progress.duration(math.huge))
  end)

  it("refuses unknown and bad arguments with a suggestion", function()
    local ok, err = pcall(function() oar.progress{ totl = 10 } end)
    assert.is_false(ok)
    assert.truthy(err:find("progress_spec.lua:%d+: oar.progress: unknown argument 'totl' %(did you mean 'total'%?%)"))
    assert.has_error(function() oar.progress{ total = 0 } end)
    assert.has_error(function() oar.progress{ total = 2.5 } end)
    assert.has_error(function() oar.progress(10) end)
    local bar = oar.progress{ total = 5, stream = sink() }
    local ok2, err2 = pcall(bar.update, bar, 6)
    assert.is_false(ok2)
    assert.truthy(err2:find("0..5", 1, true))
    assert.has_error(function() bar.update(7) end)
    bar:finish()
    assert.has_error(function() bar:update(1) end)
  end)
end)
