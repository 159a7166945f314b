--- oar.eager's joining, splitting and selecting functions (docs/eager.md,
-- "The contract"): cat, stack, split, index_select, gather, where, sort,
-- topk, each eager calls of registered ops (concat, stack, split,
-- index_select, gather, where, argsort, top_k); eager.lua installs them.
-- Indices are 1-based.
-- @module oar.eager_select
local tensor = require("oar.tensor")

local is_tensor = tensor.is_tensor

local M = {}
-- oar.eager and its internals (install)
local E, run, check_tensor, axis, one_based, zero_based, fail


--- Tensors joined along dim d (default 1).
-- @usage local c = oar.cat({oar.ones(2), oar.zeros(3)}, 1)
function M.cat(list, d)
  if type(list) ~= "table" or #list == 0 then fail("cat: expected a non-empty list of tensors") end
  for i = 1, #list do check_tensor(list[i], "cat", "item " .. i) end
  return run("concat", { { "X", list } }, { { "Out", 1 } }, { axis = axis(d or 1, #list[1]:shape(), "cat") })[1]
end

--- Tensors of one shape stacked along a new dim d (default 1).
-- @usage local s = oar.stack({oar.ones(2), oar.zeros(2)}, 1)
function M.stack(list, d)
  if type(list) ~= "table" or #list == 0 then fail("stack: expected a non-empty list of tensors") end
  for i = 1, #list do check_tensor(list[i], "stack", "item " .. i) end
  local n = #list[1]:shape() + 1
  return run("stack", { { "X", list } }, { { "Y", 1 } }, { axis = axis(d or 1, n, "stack") })[1]
end

--- Pieces of `size` along d (default 1), the last one smaller when size does not divide; a Lua table.
-- @usage local parts = oar.arange(1, 6):split(2)
function M.split(a, size, d)
  check_tensor(a, "split")
  local shape = a:shape()
  local ax = axis(d or 1, #shape, "split")
  local len = shape[ax + 1]
  if type(size) ~= "number" or size < 1 or size % 1 ~= 0 then fail("split: size must be a positive integer") end
  local sections = {}
  local left = len
  while left > 0 do
    sections[#sections + 1] = math.min(size, left)
    left = left - size
  end
  if #sections <= 1 then return { E.clone(a) } end
  return run("split", { { "X", a } }, { { "Out", #sections } }, { sections = sections, axis = ax, num = 0 })
end

--- The slices at 1-based indices (a table or an int64 tensor) along d.
-- @usage local r = oar.eye(3):index_select(1, {3, 1})
function M.index_select(a, d, idx)
  check_tensor(a, "index_select")
  local i0 = zero_based(idx, "index_select")
  return run("index_select", { { "X", a }, { "Index", i0 } }, { { "Out", 1 } },
    { dim = axis(d, #a:shape(), "index_select") })[1]
end

--- out[p] = a[p with dim d replaced by idx[p]] (Torch's gather; idx 1-based, int64).
-- @usage local g = oar.Tensor({{1, 2}, {3, 4}}):gather(2, oar.Tensor({{2}, {1}}, "int64"))
function M.gather(a, d, idx)
  check_tensor(a, "gather")
  if type(idx) == "table" and not is_tensor(idx) then idx = tensor(idx, "int64") end
  check_tensor(idx, "gather", "the index")
  local shape, ishape = a:shape(), idx:shape()
  local n = #shape
  local ax = axis(d, n, "gather") + 1
  if #ishape ~= n then fail(string.format("gather: the index has %d dims, the tensor %d", #ishape, n)) end
  local strides, acc = {}, 1
  for k = n, 1, -1 do strides[k] = acc; acc = acc * shape[k] end
  local vals = idx:long():data()
  local count = idx:numel()
  local flat = E.zeros({ count }, "int64")
  local fp = flat:data()
  local pos = {}
  for k = 1, n do pos[k] = 0 end
  for i = 0, count - 1 do
    local off = 0
    for k = 1, n do
      local v = pos[k]
      if k == ax then
        v = tonumber(vals[i]) - 1
        if v < 0 or v >= shape[k] then fail(string.format("gather: index %d is outside 1..%d", v + 1, shape[k])) end
      elseif v >= shape[k] then
        fail(string.format("gather: the index's dim %d (%d) exceeds the tensor's (%d)", k, ishape[k], shape[k]))
      end
      off = off + v * strides[k]
    end
    fp[i] = off
    for k = n, 1, -1 do
      pos[k] = pos[k] + 1
      if pos[k] < ishape[k] then break end
      pos[k] = 0
    end
  end
  local g = run("gather", { { "X", E.reshape(a, { -1 }) }, { "Index", flat } }, { { "Out", 1 } }, { overwrite = true })[1]
  return E.reshape(g, ishape)
end

--- Elements of a where cond holds, else of b (numbers allowed for a and b).
-- @usage local w = oar.where(oar.Tensor({1, -1}):gt(0), oar.Tensor({1, 2}), 0)
function M.where(cond, a, b)
  check_tensor(cond, "where", "the condition")
  if type(a) == "number" then a = E.full(cond:shape(), a, is_tensor(b) and b:dtype() or "float32") end
  if type(b) == "number" then b = E.full(cond:shape(), b, a:dtype()) end
  check_tensor(a, "where"); check_tensor(b, "where")
  if cond:dtype() ~= "bool" then cond = E.type(cond, "bool") end
  return run("where", { { "Condition", cond }, { "X", a }, { "Y", b } }, { { "Out", 1 } })[1]
end

--- Sorted values along d (default the last) and their 1-based indices; descending when asked.
-- @usage local v, i = oar.Tensor({3, 1, 2}):sort(1, true)
function M.sort(a, d, descending)
  check_tensor(a, "sort")
  if type(d) == "boolean" then d, descending = nil, d end
  local n = #a:shape()
  local ax = d and axis(d, n, "sort") or n - 1
  local src = descending and E.neg(a) or a
  local r = run("argsort", { { "X", src } }, { { "Out", 1 }, { "Indices", 1 } }, { axis = ax })
  local vals = descending and E.neg(r[1]) or r[1]
  return vals, one_based(r[2])
end

--- The k largest values along d (default the last), largest first, and their 1-based indices.
-- @usage local v, i = oar.Tensor({3, 1, 2}):topk(2)
function M.topk(a, k, d)
  check_tensor(a, "topk")
  local n = #a:shape()
  local ax = d and axis(d, n, "topk") or n - 1
  local x = a
  if ax ~= n - 1 then x = E.transpose(a, ax + 1, n) end
  local r = run("top_k", { { "X", x } }, { { "Out", 1 }, { "Indices", 1 } }, { k = k })
  local vals, idx = r[1], r[2]
  if ax ~= n - 1 then
    vals = E.transpose(vals, ax + 1, n)
    idx = E.transpose(idx, ax + 1, n)
  end
  return vals, one_based(idx)
end

--- Puts these functions into oar.eager (eager.lua calls it).
-- @tparam table eager the oar.eager module
-- @tparam table internals run, check_tensor, axis, one_based, zero_based
-- @local
function M.install(eager, internals)
  E, fail = eager, eager._fail
  run, check_tensor, axis = internals.run, internals.check_tensor, internals.axis
  one_based, zero_based = internals.one_based, internals.zero_based
  eager._install_functions(M)
end

return M
