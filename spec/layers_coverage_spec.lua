-- docs/layers_coverage.md against the live registry and oar.layers: every
-- registered forward op has a row, every layer a row names exists, every
-- op whose type is a Fluid 1.8 layer name has that layer (so adding an op
-- without its layer fails here), and the doc's list of the Fluid layers
-- oar lacks is exactly what oar.layers lacks.
local ffi = require("ffi")
local lib = require("oar.lib")
local layers = require("oar").layers

local DOC = "docs/layers_coverage.md"

local read = require("spec.helpers.files").read_bytes

local function registered_forward_ops()
  local C = lib.C
  local out = {}
  for i = 0, C.oar_op_num_registered() - 1 do
    local t = ffi.string(C.oar_op_registered_at(i))
    if not t:match("_grad$") then out[#out + 1] = t end
  end
  table.sort(out)
  return out
end

-- the rows of the table: op -> {fluid=, oar=, status=, note=}
local function rows(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local op, fluid, oar, status, note = line:match("^| `([%w_]+)` | ([^|]*) | ([^|]*) | ([^|]*) |%s*([^|]*)|$")
    if op then
      assert(out[op] == nil, DOC .. ": two rows for op '" .. op .. "'")
      out[op] = { fluid = fluid, oar = oar, status = status, note = note }
    end
  end
  return out
end

-- the fenced block after `heading`: "file: names..." lines, indented continuations
local function name_block(text, heading)
  local at = text:find(heading, 1, true)
  assert(at, DOC .. ": no section '" .. heading .. "'")
  local block = text:match("```\n(.-)\n```", at)
  assert(block, DOC .. ": no name list under '" .. heading .. "'")
  local names, order = {}, {}
  for word in block:gmatch("%S+") do
    if not word:match(":$") and word ~= "(none)" then
      names[word] = true
      order[#order + 1] = word
    end
  end
  return names, order
end

-- registered ops without a row
local function without_row(ops, table_rows)
  local out = {}
  for _, op in ipairs(ops) do if not table_rows[op] then out[#out + 1] = op end end
  return out
end

-- registered ops named like a Fluid layer that oar.layers lacks (a `clash` row excuses one)
local function without_layer(ops, table_rows, fluid_names, lib_layers)
  local out = {}
  for _, op in ipairs(ops) do
    local r = table_rows[op]
    if fluid_names[op] and rawget(lib_layers, op) == nil and not (r and r.status == "clash") then
      out[#out + 1] = op
    end
  end
  return out
end

describe("layer coverage (docs/layers_coverage.md)", function()
  local text = read(DOC)
  local table_rows = rows(text)
  local fluid_names, fluid_order = name_block(text, "## Fluid 1.8's layer names")
  local missing_listed = name_block(text, "## Fluid 1.8 layers oar does not have")
  local STATUSES = { had = true, new = true, internal = true, optimizer = true, ["not exposed"] = true, clash = true }

  it("has a row for every registered op, and none for ops oar does not register", function()
    local ops = registered_forward_ops()
    assert.is_true(#ops > 150, "the registry lists " .. #ops .. " forward ops")
    local have = {}
    for _, op in ipairs(ops) do have[op] = true end
    local missing = without_row(ops, table_rows)
    assert(#missing == 0, "registered ops with no row in " .. DOC .. " (add its layer to oar.layers and a row, "
      .. "or a row saying why it has none): " .. table.concat(missing, ", "))
    local stale = {}
    for op in pairs(table_rows) do if not have[op] then stale[#stale + 1] = op end end
    table.sort(stale)
    assert(#stale == 0, DOC .. " has rows for ops oar does not register: " .. table.concat(stale, ", "))
  end)

  it("gives every row a known status, and a reason when the op has no layer", function()
    for op, r in pairs(table_rows) do
      assert(STATUSES[r.status], op .. ": unknown status '" .. r.status .. "'")
      if r.status ~= "had" and r.status ~= "new" then
        assert(r.note:match("%S"), op .. ": status '" .. r.status .. "' needs a note saying why")
      end
      if r.status == "new" or r.status == "had" then
        assert(r.oar:find("layers.", 1, true) or r.oar:find("`oar.", 1, true),
          op .. ": status '" .. r.status .. "' but no layers.NAME (or oar.NAME) in the oar column")
      end
    end
  end)

  it("names only layers oar.layers has", function()
    local absent = {}
    for op, r in pairs(table_rows) do
      for name in r.oar:gmatch("`layers%.([%w_]+)`") do
        if type(rawget(layers, name)) ~= "function" then absent[#absent + 1] = op .. " -> layers." .. name end
      end
    end
    table.sort(absent)
    assert(#absent == 0, "rows name layers oar.layers does not have: " .. table.concat(absent, ", "))
  end)

  it("has the Fluid layer of every registered op whose type is a Fluid 1.8 layer name", function()
    assert.is_true(#fluid_order > 300, "the Fluid name list has " .. #fluid_order .. " names")
    local absent = without_layer(registered_forward_ops(), table_rows, fluid_names, layers)
    assert(#absent == 0, "ops named like a Fluid layer without layers.<op>: " .. table.concat(absent, ", "))
  end)

  it("catches a new op that has neither a row nor its Fluid layer", function()
    local ops = registered_forward_ops()
    ops[#ops + 1] = "py_func"   -- a Fluid 1.8 layer oar has no op for (it runs Python)
    assert.same({ "py_func" }, without_row(ops, table_rows))
    assert.same({ "py_func" }, without_layer(ops, table_rows, fluid_names, layers))
    -- and an existing op whose layer went missing (a layers table without gather)
    assert.same({}, without_layer({ "gather" }, table_rows, fluid_names, layers))
    assert.same({ "gather" }, without_layer({ "gather" }, table_rows, fluid_names, {}))
  end)

  it("lists exactly the Fluid 1.8 layers oar.layers lacks", function()
    local wrong = {}
    for _, name in ipairs(fluid_order) do
      local has = rawget(layers, name) ~= nil
      if has and missing_listed[name] then wrong[#wrong + 1] = name .. " (listed as missing, but oar has it)" end
      if not has and not missing_listed[name] then wrong[#wrong + 1] = name .. " (missing, not listed)" end
    end
    for name in pairs(missing_listed) do
      if not fluid_names[name] then wrong[#wrong + 1] = name .. " (listed as missing, not a Fluid name)" end
    end
    table.sort(wrong)
    assert(#wrong == 0, DOC .. ": " .. table.concat(wrong, "; "))
  end)
end)
