-- oar.nn and eager optimizers (docs/eager.md, "Training a model eagerly"):
-- module forwards against plain Lua; parameters, state_dict and
-- load_state_dict; train/eval for Dropout and BatchNorm; losses against
-- plain Lua; user modules; errors; and the key check: an MLP trained
-- eagerly and in a static program from the same initial parameters ends
-- with the same parameters, bit for bit, for SGD and Adam.
local oar = require("oar")
local nn = oar.nn
local F = nn.functional
local layers = oar.layers

local function close(got, want, tol, what)
  assert(math.abs(got - want) <= tol * math.max(1, math.abs(want)),
    string.format("%s: expected %.9g, got %.9g", what or "value", want, got))
end

-- t (a tensor) against a nested Lua table of numbers
local function close_table(t, want, tol)
  local got = t:totable()
  local function walk(a, b, path)
    if type(b) == "table" then
      assert.are.equal(#b, #a, path)
      for i = 1, #b do walk(a[i], b[i], path .. "[" .. i .. "]") end
    else
      close(a, b, tol, path)
    end
  end
  walk(got, want, "t")
end

describe("oar.nn modules", function()
  it("Linear: x W + b over the last dim, W [in, out] Xavier-uniform, b zeros", function()
    oar.seed(3)
    local fc = nn.Linear(3, 2)
    assert.are.same({ 3, 2 }, fc.weight:shape())
    assert.are.same({ 0, 0 }, fc.bias:totable())
    local limit = math.sqrt(6 / (3 + 2))
    for _, row in ipairs(fc.weight:totable()) do
      for _, v in ipairs(row) do assert(v >= -limit and v <= limit) end
    end
    oar.no_grad(function() fc.bias:copy(oar.Tensor({ 0.5, -1 })) end)
    local x = oar.randn(4, 3)
    local y = fc(x)
    local w, xv = fc.weight:totable(), x:totable()
    local want = {}
    for i = 1, 4 do
      want[i] = {}
      for j = 1, 2 do
        local s = ({ 0.5, -1 })[j]
        for k = 1, 3 do s = s + xv[i][k] * w[k][j] end
        want[i][j] = s
      end
    end
    close_table(y, want, 1e-5)
    -- 3-D input: over the last dim
    assert.are.same({ 2, 4, 2 }, fc(oar.randn(2, 4, 3)):shape())
    -- no bias
    local nb = nn.Linear(3, 2, { bias = false })
    assert.are.equal(1, #nb:parameters())
    -- the same draws as oar.seed then a fresh Linear
    oar.seed(3)
    assert.are.same(fc.weight:totable(), nn.Linear(3, 2).weight:totable())
  end)

  it("Linear's init equals layers.fc's startup run under the same seed", function()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 5 } }
      layers.fc{ input = x, size = 4, param_attr = oar.ParamAttr{ name = "nnw" }, bias_attr = oar.ParamAttr{ name = "nnb" } }
    end)
    local scope = oar.Scope()
    oar.seed(11)
    oar.Executor(oar.CPUPlace()):run(startup, { scope = scope })
    oar.seed(11)
    local fc = nn.Linear(5, 4)
    assert.are.same(scope:find_var("nnw"):get_tensor():totable(), fc.weight:totable())
  end)

  it("Conv2D: a convolution with bias against plain Lua; Normal(0, sqrt(2 / fan_in)) filter", function()
    oar.seed(5)
    local conv = nn.Conv2D(2, 3, 3, { padding = 1, stride = 2 })
    assert.are.same({ 3, 2, 3, 3 }, conv.weight:shape())
    oar.no_grad(function() conv.bias:copy(oar.Tensor({ 1, 2, 3 })) end)
    local x = oar.randn(1, 2, 5, 5)
    local y = conv(x)
    assert.are.same({ 1, 3, 3, 3 }, y:shape())
    local xv, wv, yv = x:totable(), conv.weight:totable(), y:totable()
    for o = 1, 3 do
      for i = 1, 3 do
        for j = 1, 3 do
          local s = o
          for c = 1, 2 do
            for ki = 1, 3 do
              for kj = 1, 3 do
                local r, q = (i - 1) * 2 - 1 + ki, (j - 1) * 2 - 1 + kj
                if r >= 1 and r <= 5 and q >= 1 and q <= 5 then s = s + xv[1][c][r][q] * wv[o][c][ki][kj] end
              end
            end
          end
          close(yv[1][o][i][j], s, 1e-5, "y")
        end
      end
    end
    -- the filter's spread is about sqrt(2 / 18) (a loose check on 54 draws)
    local big = nn.Conv2D(8, 16, 3)
    local sum, sq, n = 0, 0, big.weight:numel()
    for _, v in ipairs(big.weight:reshape(-1):totable()) do sum = sum + v; sq = sq + v * v end
    close(math.sqrt(sq / n - (sum / n) ^ 2), math.sqrt(2 / 72), 0.15, "std")
    -- groups
    assert.are.same({ 4, 1, 3, 3 }, nn.Conv2D(2, 4, 3, { groups = 2 }).weight:shape())
  end)

  it("Pool2D: max and avg against plain Lua", function()
    local x = oar.arange(1, 17):reshape{ 1, 1, 4, 4 }
    close_table(nn.Pool2D{ pool_size = 2, pool_stride = 2 }(x), { { { { 6, 8 }, { 14, 16 } } } }, 0)
    close_table(nn.Pool2D{ pool_size = 2, pool_stride = 2, pool_type = "avg" }(x), { { { { 3.5, 5.5 }, { 11.5, 13.5 } } } }, 1e-6)
  end)

  it("activations: ReLU, Tanh, Sigmoid, Softmax and the functional ones", function()
    local v = { -2, -0.5, 0, 1, 3 }
    local x = oar.Tensor(v)
    local function each(f) local t = {} for i, a in ipairs(v) do t[i] = f(a) end return t end
    close_table(nn.ReLU()(x), each(function(a) return math.max(a, 0) end), 0)
    close_table(nn.Tanh()(x), each(math.tanh), 1e-6)
    close_table(nn.Sigmoid()(x), each(function(a) return 1 / (1 + math.exp(-a)) end), 1e-6)
    close_table(F.relu(x), each(function(a) return math.max(a, 0) end), 0)
    local z = 0
    for _, a in ipairs(v) do z = z + math.exp(a) end
    close_table(nn.Softmax(1)(x), each(function(a) return math.exp(a) / z end), 1e-6)
    close_table(F.log_softmax(x), each(function(a) return a - math.log(z) end), 1e-5)
  end)

  it("LayerNorm and Embedding", function()
    local x = oar.Tensor({ { 1, 2, 3, 4 }, { 2, 2, 2, 6 } })
    local y = nn.LayerNorm(4)(x):totable()
    for r, row in ipairs(x:totable()) do
      local m, var = 0, 0
      for _, a in ipairs(row) do m = m + a / 4 end
      for _, a in ipairs(row) do var = var + (a - m) ^ 2 / 4 end
      for i, a in ipairs(row) do close(y[r][i], (a - m) / math.sqrt(var + 1e-5), 1e-5, "ln") end
    end
    local emb = nn.Embedding(5, 3)
    local e = emb(oar.Tensor({ { 4, 0 } }, "int64"))
    assert.are.same({ 1, 2, 3 }, e:shape())
    local w = emb.weight:totable()
    assert.are.same(w[5], e:totable()[1][1])
    assert.are.same(w[1], e:totable()[1][2])
  end)

  it("Dropout: drops and rescales in training, the identity in evaluation", function()
    oar.seed(7)
    local d = nn.Dropout(0.5)
    local y = d(oar.ones(1000)):totable()
    local kept = 0
    for _, a in ipairs(y) do
      assert(a == 0 or a == 2, "dropout value " .. a)
      if a == 2 then kept = kept + 1 end
    end
    assert(kept > 400 and kept < 600, "kept " .. kept)
    d:eval()
    local x = oar.randn(10)
    assert.are.same(x:totable(), d(x):totable())
    d:train()
    assert.is_true(d.training)
  end)

  it("BatchNorm: batch statistics and running updates in training, running statistics in evaluation", function()
    local bn = nn.BatchNorm(2)
    local x = oar.Tensor({ { 1, 10 }, { 3, 20 }, { 5, 60 } })
    local y = bn(x):totable()
    local xv = x:totable()
    for c = 1, 2 do
      local m, var = 0, 0
      for i = 1, 3 do m = m + xv[i][c] / 3 end
      for i = 1, 3 do var = var + (xv[i][c] - m) ^ 2 / 3 end
      for i = 1, 3 do close(y[i][c], (xv[i][c] - m) / math.sqrt(var + 1e-5), 1e-4, "bn train") end
      -- running = 0.9 * running + 0.1 * batch (the op's momentum)
      close(bn.running_mean:totable()[c], 0.1 * m, 1e-5, "running_mean")
    end
    local rm, rv = bn.running_mean:totable(), bn.running_var:totable()
    bn:eval()
    local ye = bn(x):totable()
    for c = 1, 2 do
      for i = 1, 3 do close(ye[i][c], (xv[i][c] - rm[c]) / math.sqrt(rv[c] + 1e-5), 1e-4, "bn eval") end
    end
    assert.are.same(rm, bn.running_mean:totable())   -- evaluation leaves them
    -- the buffers are in the state, not in the parameters
    local sd = bn:state_dict()
    assert.is_not_nil(sd.running_mean); assert.is_not_nil(sd.running_var)
    assert.are.equal(2, #bn:parameters())
  end)
end)

describe("module structure", function()
  it("parameters() in registration order, state_dict keys as dotted paths, load_state_dict round trips", function()
    oar.seed(1)
    local model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    local names = {}
    for _, p in ipairs(model:named_parameters()) do names[#names + 1] = p[1] end
    assert.are.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, names)
    local ps = model:parameters()
    assert.are.equal(4, #ps)
    assert.are.equal(model:get(1).weight, ps[1])
    local sd = model:state_dict()
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "0.bias", "0.weight", "2.bias", "2.weight" }, keys)
    -- saved, changed, loaded back
    local path = os.tmpname()
    oar.save(sd, path)
    local before = model:get(1).weight:totable()
    oar.no_grad(function() model:get(1).weight:fill(0) end)
    model:load_state_dict(oar.load(path))
    os.remove(path)
    assert.are.same(before, model:get(1).weight:totable())
    -- into a fresh model of the same layout
    local other = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    other:load_state_dict(model:state_dict())
    local x = oar.randn(5, 4)
    assert.are.same(model(x):totable(), other(x):totable())
    -- missing keys and wrong shapes are errors
    local ok, err = pcall(function() other:load_state_dict({ ["0.weight"] = oar.zeros(4, 3) }) end)
    assert.is_false(ok); assert.truthy(err:find("missing keys {0.bias, 2.bias, 2.weight}", 1, true))
    sd = model:state_dict(); sd["0.weight"] = oar.zeros(3, 4)
    ok, err = pcall(function() other:load_state_dict(sd) end)
    assert.is_false(ok); assert.truthy(err:find("'0.weight' has shape [4, 3] here, [3, 4]", 1, true))
  end)

  it("Sequential:add chains; train()/eval() reach every child", function()
    local s = nn.Sequential():add(nn.Linear(4, 3)):add(nn.Dropout(0.5)):add(nn.ReLU())
    assert.are.equal(3, s:size())
    assert.are.same({ 4, 3 }, s:get(1).weight:shape())
    assert.is_true(s:eval() == s)
    assert.is_false(s:get(2).training)
    s:train()
    assert.is_true(s:get(2).training)
  end)

  it("a user module via nn.Module:extend nests, registers and trains", function()
    local Block = nn.Module:extend("Block")
    function Block:init(n) self.fc = nn.Linear(n, n); self.norm = nn.LayerNorm(n) end
    function Block:forward(x) return self.norm(self.fc(x)):relu() end
    local Net = nn.Module:extend("Net")
    function Net:init()
      self.body = Block(4)
      self.head = nn.Linear(4, 2)
      self.scale = oar.ones(1):requires_grad()   -- a tensor that requires grad: a parameter
      self.note = "plain field"
    end
    function Net:forward(x) return self.head(self.body(x)) * self.scale end
    local net = Net()
    local names = {}
    for _, p in ipairs(net:named_parameters()) do names[#names + 1] = p[1] end
    assert.are.same({ "scale", "body.fc.weight", "body.fc.bias", "body.norm.weight", "body.norm.bias",
                      "head.weight", "head.bias" }, names)
    assert.are.equal("plain field", net.note)
    local y = net(oar.randn(3, 4))
    assert.are.same({ 3, 2 }, y:shape())
    y:sum():backward()
    for _, p in ipairs(net:parameters()) do assert.is_not_nil(p.grad) end
    net:zero_grad()
    for _, p in ipairs(net:parameters()) do assert.is_nil(p.grad) end
    -- a subclass of a user class
    local Net2 = Net:extend("Net2")
    function Net2:forward(x) return Net.forward(self, x):tanh() end
    assert.are.same({ 3, 2 }, Net2()(oar.randn(3, 4)):shape())
  end)

  it("errors: a wrong input size to Linear names the module and both shapes, at the caller's line", function()
    local Net = nn.Module:extend("Net")
    function Net:init() self.fc = nn.Linear(4, 2) end
    function Net:forward(x) return self.fc(x) end
    local ok, err = pcall(function() return Net()(oar.randn(3, 5)) end)
    assert.is_false(ok)
    assert.truthy(err:find("Linear 'fc'", 1, true), err)
    assert.truthy(err:find("[3, 5]", 1, true), err)
    assert.truthy(err:find("[4, 2]", 1, true), err)
    assert.truthy(err:find("eager_nn_spec.lua", 1, true), err)
    ok, err = pcall(function() return nn.Conv2D(3, 4, 3)(oar.randn(1, 2, 5, 5)) end)
    assert.is_false(ok); assert.truthy(err:find("[1, 2, 5, 5]", 1, true), err)
  end)
end)

describe("losses against plain Lua", function()
  local logits = { { 1, 2, 0.5 }, { -1, 0, 3 }, { 0.2, 0.2, 0.2 } }
  local label = { 1, 2, 0 }   -- 0-based class ids
  local function lse(row)
    local z = 0
    for _, a in ipairs(row) do z = z + math.exp(a) end
    return math.log(z)
  end
  it("cross_entropy: mean of -log softmax at the label; labels [N] or [N, 1]", function()
    local want = 0
    for i = 1, 3 do want = want + (lse(logits[i]) - logits[i][label[i] + 1]) / 3 end
    local x = oar.Tensor(logits)
    close(F.cross_entropy(x, oar.Tensor(label, "int64")):item(), want, 1e-6, "ce [N]")
    close(F.cross_entropy(x, oar.Tensor({ { 1 }, { 2 }, { 0 } }, "int64")):item(), want, 1e-6, "ce [N, 1]")
  end)
  it("nll_loss: mean of -logp at the label", function()
    local want = 0
    for i = 1, 3 do want = want - logits[i][label[i] + 1] / 3 end
    close(F.nll_loss(oar.Tensor(logits), oar.Tensor(label, "int64")):item(), want, 1e-6, "nll")
    -- nll of log_softmax is cross_entropy
    local x = oar.Tensor(logits)
    close(F.nll_loss(F.log_softmax(x), oar.Tensor(label, "int64")):item(),
      F.cross_entropy(x, oar.Tensor(label, "int64")):item(), 1e-6, "nll . log_softmax")
  end)
  it("mse_loss: mean squared difference", function()
    close(F.mse_loss(oar.Tensor({ 1, 2, 3 }), oar.Tensor({ 0, 2, 5 })):item(), 5 / 3, 1e-6, "mse")
  end)
  it("a wrong label shape is an error naming both shapes", function()
    local ok, err = pcall(function() return F.cross_entropy(oar.zeros(3, 2), oar.zeros({ 4 }, "int64")) end)
    assert.is_false(ok); assert.truthy(err:find("[4, 1]", 1, true), err)
  end)
end)

describe("eager optimizers", function()
  -- an MLP 6 -> 8 -> 3 trained `steps` times on one batch, eagerly and in a
  -- static program started from the eager model's initial parameters
  local ES = require("spec.helpers.eager_static")
  local with = ES.with
  local function both(make_opt, steps)
    local scope, sd, init = ES.train(make_opt, steps, function(model) return model:parameters() end)
    local moved = false
    for sname, ename in pairs(ES.MAP) do
      local st = scope:find_var(sname):get_tensor():totable()
      assert.are.same(st, sd[ename]:totable(), sname)
      if not moved then
        local a, b = init[ename]:reshape(-1):totable(), sd[ename]:reshape(-1):totable()
        for i = 1, #a do if a[i] ~= b[i] then moved = true end end
      end
    end
    assert.is_true(moved, "training changed nothing")
  end
  it("an MLP trained 30 steps with SGD ends with the static program's parameters, bit for bit", function()
    both(function(e) return oar.optimizer.SGD(with({ learning_rate = 0.1 }, e)) end, 30)
  end)
  it("... with Adam", function()
    both(function(e) return oar.optimizer.Adam(with({ learning_rate = 0.01 }, e)) end, 30)
  end)
  it("... with Momentum, Adagrad and RMSProp", function()
    both(function(e) return oar.optimizer.Momentum(with({ learning_rate = 0.05, momentum = 0.9 }, e)) end, 20)
    both(function(e) return oar.optimizer.Adagrad(with({ learning_rate = 0.1 }, e)) end, 20)
    both(function(e) return oar.optimizer.RMSProp(with({ learning_rate = 0.01 }, e)) end, 20)
  end)
  it("step skips parameters without a gradient; set_lr changes the rate; errors", function()
    local a, b = oar.ones(2):requires_grad(), oar.ones(2):requires_grad()
    local opt = oar.optimizer.SGD{ learning_rate = 0.5, parameters = { a, b } }
    local la = (a * a):sum()
    la:backward()
    opt:step()
    assert.are.same({ 0, 0 }, a:totable())   -- 1 - 0.5 * 2
    assert.are.same({ 1, 1 }, b:totable())
    opt:zero_grad()
    assert.is_nil(a.grad)
    opt:set_lr(0.25)
    assert.are.equal(0.25, opt:get_lr())
    local lb = (b * b):sum()
    lb:backward()
    opt:step()
    assert.are.same({ 0.5, 0.5 }, b:totable())
    local ok, err = pcall(function() oar.optimizer.SGD{ learning_rate = 0.1 }:step() end)
    assert.is_false(ok); assert.truthy(err:find("no 'parameters'", 1, true), err)
    ok, err = pcall(function() return oar.optimizer.SGD{ learning_rate = 0.1, parameters = { 1 } } end)
    assert.is_false(ok); assert.truthy(err:find("item 1 of 'parameters' must be a tensor", 1, true), err)
  end)
end)
