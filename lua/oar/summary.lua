--- oar.summary: a model's parameters as a table, grouped by layer.
--
--   print(oar.summary(main_program))
--
--   Layer (op)    Parameter  Shape      dtype    Elements      Bytes
--   ----------------------------------------------------------------
--   fc_0 (mul)    fc_0.w_0   [784, 512] float32   401,408  1,605,632
--                 fc_0.b_0   [512]      float32       512      2,048
--   ...
--   Total: 6 parameters (6 trainable), 535,818 elements, 2,143,272 bytes (2.04 MiB)
--
-- A parameter's layer is its name's prefix (Fluid's layers name them
-- <layer>_<n>.w_<k> / .b_<k>); the op shown is the first op of the program
-- that reads the layer's first parameter (mul for fc, conv2d, ...), so a
-- layer built by hand with a ParamAttr name still shows what uses it.
-- @module oar.summary
local ffi = require("ffi")
local framework = require("oar.framework")
local dtypes = require("oar.dtypes")

local M = {}

local function is_program(p)
  return type(p) == "table" and getmetatable(p) == framework.Program
end

local function thousands(n)
  local s = string.format("%d", n)
  local sign, digits = s:match("^(-?)(%d+)$")
  digits = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return sign .. digits
end

--- An integer with thousands separators.
-- @function thousands
-- @tparam int n
-- @treturn string
-- @usage print(oar.summary.thousands(1234567))   --> 1,234,567
M.thousands = thousands

local function human_bytes(b)
  local units = { "bytes", "KiB", "MiB", "GiB", "TiB" }
  local u = 1
  while b >= 1024 and u < #units do b, u = b / 1024, u + 1 end
  if u == 1 then return string.format("%d bytes", b) end
  return string.format("%.2f %s", b, units[u])
end

--- A byte count in bytes, KiB, MiB, GiB or TiB (two decimals above bytes).
-- @function human_bytes
-- @tparam number b bytes
-- @treturn string
-- @usage print(oar.summary.human_bytes(2143272))   --> 2.04 MiB
M.human_bytes = human_bytes

-- The parameters of a program: its Parameter objects, or, for a program read
-- back from bytes (which keeps no Parameter marks), its persistable tensors.
local function parameters_of(program)
  local params = program:all_parameters()
  if #params > 0 then return params end
  local out = {}
  for _, v in ipairs(program:global_block():vars()) do
    if v.persistable and v.type == "LOD_TENSOR" then out[#out + 1] = v end
  end
  return out
end

-- The position (op counter over every block, in order) and type of the first
-- op reading each variable.
local function first_readers(program)
  local first = {}
  local pos = 0
  for b = 0, program:num_blocks() - 1 do
    for _, op in ipairs(program:block(b):ops()) do
      pos = pos + 1
      for _, name in ipairs(op:input_arg_names()) do
        if not first[name] then first[name] = { pos = pos, type = op.type } end
      end
    end
  end
  return first
end

--- The summary as data: layers in the order the program first uses them
-- (unused ones last, by name). A program read back from bytes (no
-- Parameter marks) counts its persistable tensors.
-- @tparam Program program
-- @treturn table `{layers = {{name=, op=, elements=, bytes=, params = {{name=, shape=, dtype=,
-- elements=, bytes=, trainable=}, ...}}, ...}, parameters=, trainable=,
-- elements=, trainable_elements=, bytes=}`
-- @raise when program is not a Program
-- @usage
-- local s = oar.summary.collect(oar.default_main_program())
-- print(s.parameters, s.elements)
function M.collect(program)
  if not is_program(program) then
    error("oar.summary: expects a Program (e.g. oar.default_main_program()), got " ..
          framework.describe(program), 2)
  end
  local readers = first_readers(program)
  local never = math.huge
  local groups, by_name = {}, {}
  for _, p in ipairs(parameters_of(program)) do
    local name = rawget(p, "name")
    local layer = name:match("^(.-)%.") or name
    local shape = p.shape
    local elements = 1
    for _, d in ipairs(shape) do elements = elements * d end
    if elements < 0 then elements = 0 end  -- an unknown (-1) dimension: size not known
    local dtype = p.dtype
    local bytes = elements * ffi.sizeof(dtypes.ctype(dtype))
    local trainable = rawget(p, "trainable")
    if trainable == nil then trainable = not p.stop_gradient end
    local reader = readers[name]
    local entry = { name = name, shape = shape, dtype = dtype, elements = elements, bytes = bytes,
                    trainable = trainable, pos = reader and reader.pos or never, op = reader and reader.type }
    local g = by_name[layer]
    if not g then
      g = { name = layer, params = {}, elements = 0, bytes = 0 }
      by_name[layer] = g
      groups[#groups + 1] = g
    end
    g.params[#g.params + 1] = entry
    g.elements = g.elements + elements
    g.bytes = g.bytes + bytes
  end
  local function earlier(a, b)
    if a.pos ~= b.pos then return a.pos < b.pos end
    return a.name < b.name
  end
  local out = { layers = groups, parameters = 0, trainable = 0, elements = 0, trainable_elements = 0, bytes = 0 }
  for _, g in ipairs(groups) do
    table.sort(g.params, earlier)
    g.pos = g.params[1].pos
    g.op = g.params[1].op
    for _, e in ipairs(g.params) do
      e.pos, e.op = nil, nil
      out.parameters = out.parameters + 1
      out.elements = out.elements + e.elements
      out.bytes = out.bytes + e.bytes
      if e.trainable then
        out.trainable = out.trainable + 1
        out.trainable_elements = out.trainable_elements + e.elements
      end
    end
  end
  table.sort(groups, earlier)
  for _, g in ipairs(groups) do g.pos = nil end
  return out
end

local function shape_text(s)
  return "[" .. table.concat(s, ", ") .. "]"
end

--- The summary as text (see the module comment); also `oar.summary(program)`.
-- @tparam Program program
-- @treturn string the table, one line per parameter, and a total line
-- @raise when program is not a Program
-- @usage print(oar.summary(oar.default_main_program()))
function M.text(program)
  if not is_program(program) then
    error("oar.summary: expects a Program (e.g. oar.default_main_program()), got " ..
          framework.describe(program), 2)
  end
  local s = M.collect(program)
  local rows = { { "Layer (op)", "Parameter", "Shape", "dtype", "Elements", "Bytes" } }
  for _, g in ipairs(s.layers) do
    for i, p in ipairs(g.params) do
      local layer = ""
      if i == 1 then layer = g.op and (g.name .. " (" .. g.op .. ")") or g.name end
      rows[#rows + 1] = { layer, p.name .. (p.trainable and "" or " *"), shape_text(p.shape), p.dtype,
                          thousands(p.elements), thousands(p.bytes) }
    end
  end
  local widths = {}
  for _, r in ipairs(rows) do
    for c, cell in ipairs(r) do widths[c] = math.max(widths[c] or 0, #cell) end
  end
  local right = { [5] = true, [6] = true }
  local lines = {}
  local function line(r)
    local cells = {}
    for c, cell in ipairs(r) do
      local pad = string.rep(" ", widths[c] - #cell)
      cells[c] = right[c] and pad .. cell or cell .. pad
    end
    lines[#lines + 1] = (table.concat(cells, "  "):gsub("%s+$", ""))
  end
  line(rows[1])
  local total_width = 0
  for c = 1, #widths do total_width = total_width + widths[c] end
  total_width = total_width + 2 * (#widths - 1)
  local rule = string.rep("-", total_width)
  lines[#lines + 1] = rule
  for i = 2, #rows do line(rows[i]) end
  lines[#lines + 1] = rule
  lines[#lines + 1] = string.format("Total: %d parameter%s (%d trainable), %s elements (%s trainable), %s bytes (%s)",
    s.parameters, s.parameters == 1 and "" or "s", s.trainable, thousands(s.elements),
    thousands(s.trainable_elements), thousands(s.bytes), human_bytes(s.bytes))
  if s.trainable < s.parameters then
    lines[#lines + 1] = "* not trained by the optimizer (trainable = false)"
  end
  return table.concat(lines, "\n")
end

return setmetatable(M, { __call = function(_, program) return M.text(program) end })
