-- lstm, lstm_grad, gru and gru_grad are OAR_OP_WRITES_OUTPUTS: the runtime
-- hands them new output buffers without clearing them, so their kernels
-- must write every element. Buffers a run frees go to the block cache and
-- come back in the next run: a run that leaves NaN-filled blocks there, then
-- the recurrent net again, must give the same bits as before (an element a
-- kernel skipped would read as NaN or stale data).
local oar = require("oar")
local layers = oar.layers

local function net(cell)
  local T, H, B = 16, 64, 24
  local main, startup = oar.Program(), oar.Program()
  local fetch
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { H }, lod_level = 1 }
    local h0 = layers.data{ name = "h0", shape = { H } }
    local c0 = layers.data{ name = "c0", shape = { H } }
    local proj = layers.fc{ input = x, size = (cell == "gru" and 3 or 4) * H }
    local h = cell == "gru" and layers.dynamic_gru{ input = proj, size = H, h_0 = h0 }
      or layers.dynamic_lstm{ input = proj, size = 4 * H, h_0 = h0, c_0 = c0 }
    local loss = layers.mean(layers.fc{ input = layers.sequence_last_step(h), size = 3 })
    fetch = {}
    for _, pg in ipairs(oar.append_backward(loss)) do fetch[#fetch + 1] = pg[2] end
    fetch[#fetch + 1] = loss
  end)
  local xt = oar.Tensor{ shape = { T * B, H }, dtype = "float32" }
  for i = 0, T * B * H - 1 do xt:data()[i] = math.sin(i * 0.37) end
  local lod, acc = { 0 }, 0
  for b = 1, B do acc = acc + ((b % 2 == 0) and T + 5 or T - 5); lod[#lod + 1] = acc end
  xt:set_lod({ lod })
  local h0t = oar.Tensor{ shape = { B, H }, dtype = "float32" }
  local c0t = oar.Tensor{ shape = { B, H }, dtype = "float32" }
  for i = 0, B * H - 1 do h0t:data()[i] = math.cos(i * 0.1) * 0.5; c0t:data()[i] = math.sin(i * 0.3) * 0.5 end
  return main, startup, fetch, { x = xt, h0 = h0t, c0 = c0t }
end

local function poison(exe, scope)
  local main, startup = oar.Program(), oar.Program()
  local out
  oar.program_guard(main, startup, function()
    local acc = nil
    for i = 1, 24 do   -- blocks of many size classes, NaN-filled, freed by the run
      local t = layers.fill_constant{ shape = { 4096 * i }, dtype = "float32", value = 0 / 0 }
      t = layers.scale(t, 2)
      local s = layers.reduce_sum(t)
      acc = acc and layers.elementwise_add(acc, s) or s
    end
    out = acc
  end)
  exe:run(main, { scope = scope, fetch_list = { out } })
end

local function bytes(outs)
  local r = {}
  for i, t in ipairs(outs) do
    local d, vals = t:data(), {}
    for j = 0, t:numel() - 1 do
      assert(d[j] == d[j], "output " .. i .. " element " .. j .. " is NaN")
      vals[#vals + 1] = string.format("%a", d[j])
    end
    r[i] = table.concat(vals, ",")
  end
  return r
end

describe("recurrent kernels write every element of their outputs", function()
  for _, cell in ipairs({ "lstm", "gru" }) do
    it(cell .. ": the same grads after the block cache was filled with NaN", function()
      local main, startup, fetch, feed = net(cell)
      local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
      exe:run(startup, { scope = scope })
      local first = bytes(exe:run(main, { scope = scope, feed = feed, fetch_list = fetch }))
      for _ = 1, 2 do
        poison(exe, scope)
        local again = bytes(exe:run(main, { scope = scope, feed = feed, fetch_list = fetch }))
        for i = 1, #first do assert.are.equal(first[i], again[i]) end
      end
    end)
  end
end)
