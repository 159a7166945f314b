-- Failure messages stay short and quick for big tables (issue 20): a failed
-- assert.same of two 64,000-entry arrays once spent minutes formatting them.
-- spec/helpers/setup.lua (.busted's helper) installs spec/helpers/bounded.lua
-- for every spec: a summarizing table formatter and assert.same_array.

-- n values i/8 (exact in binary), then `changes` ({ [index] = value }) applied
local function array(n, changes)
  local t = {}
  for i = 1, n do t[i] = i / 8 end
  for i, v in pairs(changes or {}) do t[i] = v end
  return t
end

-- calls fn; returns its failure message and the CPU seconds it took
local function failure(fn)
  local t0 = os.clock()
  local ok, err = pcall(fn)
  local secs = os.clock() - t0
  assert.is_false(ok, "the assertion passed")
  return tostring(type(err) == "table" and err.message or err), secs
end

local N = 64000

describe("bounded failure messages", function()
  it("assert.same of two 64,000-entry arrays fails quickly, near the first difference", function()
    local a, b = array(N), array(N, { [40001] = -1 })
    local msg, secs = failure(function() assert.same(a, b) end)
    assert(secs < 0.5, ("formatting took %.2f s"):format(secs))
    assert(#msg < 2000, "a message of " .. #msg .. " characters")
    assert.truthy(msg:find("64000 entries", 1, true), msg)
    assert.truthy(msg:find("around the first difference, [40001]", 1, true), msg)
    -- each side shows its own value there, and its neighbours
    assert.truthy(msg:find("* [40001] = -1", 1, true), msg)
    assert.truthy(msg:find("* [40001] = 5000.125", 1, true), msg)
    assert.truthy(msg:find("[40000] = 5000\n", 1, true), msg)
    assert.falsy(msg:find("[20000]", 1, true), msg)
  end)

  it("same_array names the first differing index, how many differ, and the values around it", function()
    local a = array(N)
    local b = array(N, { [40001] = -1, [50000] = -2, [60000] = 0 / 0 })
    local msg, secs = failure(function() assert.same_array(a, b) end)
    assert(secs < 0.5, ("comparing took %.2f s"):format(secs))
    assert(#msg < 1000, "a message of " .. #msg .. " characters")
    assert.truthy(msg:find("differ first at [40001] (3 of 64000 entries differ", 1, true), msg)
    assert.truthy(msg:match("%* %[40001%] +5000%.125 +%-1\n"), msg)
    assert.truthy(msg:match("  %[39999%] +4999%.875 +4999%.875\n"), msg)
    assert.truthy(msg:match("  %[40003%] +5000%.375 +5000%.375$"), msg)
  end)

  it("same_array passes on equal arrays, NaN included, and fails on a missing tail", function()
    local nan = 0 / 0
    assert.same_array(array(N, { [7] = nan }), array(N, { [7] = nan }))
    assert.same_array({}, {})
    local msg = failure(function() assert.same_array({ 1, 2, 3 }, { 1, 2 }) end)
    assert.truthy(msg:find("differ first at [3] (1 of 3 entries differ; lengths: expected 3, passed in 2)", 1, true), msg)
    assert.truthy(msg:match("%* %[3%] +3 +nil"), msg)
    -- keys outside the sequence are compared too
    msg = failure(function() assert.same_array({ 1, x = 1 }, { 1, x = 2 }) end)
    assert.truthy(msg:find('differ first at ["x"]', 1, true), msg)
  end)

  it("same_array finds the first difference inside nested arrays", function()
    local msg = failure(function()
      assert.same_array({ { 1, 2 }, array(N) }, { { 1, 2 }, array(N, { [123] = 9 }) })
    end)
    assert.truthy(msg:find("differ first at [2][123] (1 of 2 entries differ", 1, true), msg)
    assert.truthy(msg:match("%* %[2%]%[123%] +15%.375 +9"), msg)
  end)

  it("same_array takes a message, and is_not.same_array says the arrays are the same", function()
    local msg = failure(function() assert.same_array({ 1 }, { 2 }, "after the second step") end)
    assert.truthy(msg:find("after the second step\nExpected arrays to be the same", 1, true), msg)
    msg = failure(function() assert.is_not.same_array(array(N), array(N)) end)
    assert.truthy(msg:find("Expected arrays to differ, but they are the same (64000 entries)", 1, true), msg)
    msg = failure(function() assert.same_array(1, { 1 }) end)
    assert.truthy(msg:find("compares two tables; it was given a number and a table", 1, true), msg)
  end)

  it("small tables keep luassert's own format", function()
    local msg = failure(function() assert.same({ 1, 2, 3 }, { 1, 2, 4 }) end)
    assert.truthy(msg:find("*[3] = 4", 1, true), msg)
    assert.falsy(msg:find("summary", 1, true), msg)
  end)

  it("a table of many small nested tables is summarized too", function()
    local a, b = {}, {}
    for i = 1, 30 do a[i] = { i, i + 1, { i } }; b[i] = { i, i + 1, { i } } end
    b[17][3][1] = 0
    local msg = failure(function() assert.same(a, b) end)
    assert(#msg < 2000, "a message of " .. #msg .. " characters")
    assert.truthy(msg:find("30 entries: [1..30] of table", 1, true), msg)
    assert.truthy(msg:find("around the first difference, [17][3][1]", 1, true), msg)
    assert.truthy(msg:find("* [17][3][1] = 0", 1, true), msg)
    assert.truthy(msg:find("* [17][3][1] = 17", 1, true), msg)
  end)

  it("a big table that is not an array shows its size and a few keys", function()
    local t = {}
    for i = 1, 100 do t["k" .. i] = i end
    local msg = failure(function() assert.is_nil(t) end)
    assert.truthy(msg:find("(table) 100 entries\n  first: [\"k", 1, true), msg)
    assert(#msg < 1000, "a message of " .. #msg .. " characters")
  end)
end)
