-- An eager training loop's memory stays flat: 2000 steps of an MLP with
-- Adam, gradient clipping and a schedule, the resident set size (from
-- /proc/self/statm) read after a warm-up and at the end, each after a full
-- collection. The tape, the grads and the optimizer's temporaries of a step
-- must all be gone by the next.
local oar = require("oar")
local nn, F = oar.nn, oar.nn.functional

local function rss_mb()
  local f = assert(io.open("/proc/self/statm"))
  local _, res = f:read("*l"):match("(%d+)%s+(%d+)")
  f:close()
  return tonumber(res) * 4096 / 2 ^ 20
end

describe("eager training memory", function()
  it("RSS grows by less than 4 MB over 2000 steps", function()
    oar.seed(6)
    local model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    local opt = oar.optimizer.Adam{ learning_rate = oar.optimizer.lr.cosine_decay(0.01, 100, 20),
                                    parameters = model:parameters(),
                                    grad_clip = oar.clip.GradientClipByGlobalNorm(1.0) }
    local x, label = oar.randn(32, 16), oar.randint(0, 4, { 32 })
    local function steps(n)
      for _ = 1, n do
        local loss = F.cross_entropy(model(x), label)
        loss:backward()
        opt:step()
        opt:zero_grad()
      end
    end
    steps(300)
    collectgarbage(); collectgarbage()
    local before = rss_mb()
    steps(2000)
    collectgarbage(); collectgarbage()
    local after = rss_mb()
    assert(after - before < 4, string.format("RSS %.1f MB -> %.1f MB over 2000 steps", before, after))
  end)
end)
