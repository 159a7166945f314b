-- spec/helpers/cf_check.lua — whole-program checks for the control-flow
-- specs: run a program built with oar.layers, and compare the gradients the
-- backward pass computes with central finite differences of the loss over
-- fed values and parameters (float64).
--
--   local CF = require("spec.helpers.cf_check")
--   local r = CF.build(function() ... return loss, {x, w} end)   -- in fresh programs
--   local out = CF.run(r, feeds, {var, ...})                     -- forward values (tables)
--   CF.check_grads(r, feeds, {delta=, max_rel=})                 -- asserts
local oar = require("oar")
local flatten = require("spec.helpers.index").flatten

local M = {}

-- {main, startup, loss, wrt (Variables), grads (Variables), fetch (extra Variables)}
function M.build(fn, opts)
  opts = opts or {}
  local main, startup = oar.Program(), oar.Program()
  local r = { main = main, startup = startup }
  oar.program_guard(main, startup, function()
    oar.unique_name.guard(function()
      local loss, wrt, extra = fn()
      r.loss, r.wrt, r.extra = loss, wrt or {}, extra
      r.forward = main:clone()
      if opts.no_backward then return end
      r.grads = oar.gradients({ loss }, r.wrt)
    end)
  end)
  r.exe = oar.Executor()
  r.scope = oar.Scope()
  r.exe:run(startup, { scope = r.scope })
  return r
end

local function to_feed(feeds, dtype)
  local out = {}
  for name, v in pairs(feeds) do
    if oar.tensor.is_tensor(v) then
      out[name] = v
    elseif type(v) == "table" and v.data then
      local t = oar.Tensor(v.data, v.dtype or dtype or "float64")
      if v.lod then t:set_lod(v.lod) end
      out[name] = t
    else
      out[name] = oar.Tensor(v, dtype or "float64")
    end
  end
  return out
end
M.to_feed = to_feed

-- forward values of `fetch` (Variables or names) as tables; program defaults to r.main
function M.run(r, feeds, fetch, program)
  local res = r.exe:run(program or r.main, { feed = to_feed(feeds), fetch_list = fetch, scope = r.scope })
  local out = {}
  for i, t in ipairs(res) do out[i] = t end
  return out
end

-- a tensor's values, row-major
local function flat(t) return flatten(t:totable()) end
M.flat = flat

local function loss_of(r, feeds)
  local res = r.exe:run(r.forward, { feed = to_feed(feeds), fetch_list = { r.loss.name }, scope = r.scope })
  return flat(res[1])[1]
end

-- Checks every gradient in r.grads against central differences of the loss.
-- Feeds are nested tables (or {data=, lod=}); wrt Variables that are fed are
-- perturbed in the feed, the others (parameters) in the scope.
function M.check_grads(r, feeds, opts)
  opts = opts or {}
  local delta, max_rel = opts.delta or 1e-5, opts.max_rel or 1e-4
  local fetch = {}
  for i, g in ipairs(r.grads) do
    assert(g, "no gradient path to '" .. r.wrt[i].name .. "'")
    fetch[i] = g
  end
  local analytic = M.run(r, feeds, fetch)
  for i, v in ipairs(r.wrt) do
    local a = flat(analytic[i])
    local fed = feeds[v.name]
    local get, set, n
    if fed ~= nil then
      local holder = type(fed) == "table" and fed.data or fed
      local cells = {}
      local function collect(x)
        for k = 1, #x do
          if type(x[k]) == "table" then collect(x[k]) else cells[#cells + 1] = { x, k } end
        end
      end
      collect(holder)
      n = #cells
      get = function(j) return cells[j][1][cells[j][2]] end
      set = function(j, val) cells[j][1][cells[j][2]] = val end
    else
      local t = r.scope:find_var(v.name):get_tensor()
      local p = t:data()
      n = t:numel()
      get = function(j) return p[j - 1] end
      set = function(j, val) p[j - 1] = val end
    end
    assert(#a == n, string.format("gradient of '%s' has %d values, the variable %d", v.name, #a, n))
    for j = 1, n do
      local saved = get(j)
      set(j, saved + delta)
      local lp = loss_of(r, feeds)
      set(j, saved - delta)
      local lm = loss_of(r, feeds)
      set(j, saved)
      local num = (lp - lm) / (2 * delta)
      local denom = math.max(math.abs(num), math.abs(a[j]), 1e-3)
      if denom < 1 then denom = 1 end
      local rel = math.abs(a[j] - num) / denom
      if rel > max_rel then
        error(string.format("gradient of '%s' element %d: analytic %.10g vs numeric %.10g (relative error %.3g)",
          v.name, j, a[j], num, rel), 2)
      end
    end
  end
  return analytic
end

-- asserts two flat lists agree elementwise
function M.assert_near(got, want, tol, label)
  tol = tol or 1e-9
  assert(#got == #want, string.format("%s: %d values, expected %d", label or "value", #got, #want))
  for i = 1, #want do
    if math.abs(got[i] - want[i]) > tol * math.max(1, math.abs(want[i])) then
      error(string.format("%s: element %d is %.12g, expected %.12g", label or "value", i, got[i], want[i]), 2)
    end
  end
end

return M
