--- oar.framework.text: text forms: tostring of ops, blocks and programs, and to_dot.
-- @module oar.framework.text
local I = require("oar.framework.core")
local Block = I.Block
local C = I.C
local Operator = I.Operator
local Program = I.Program
local shape_text = I.shape_text
local check_program = I.check_program
local A = I.A
local block_attr_value = I.block_attr_value
local read_attr = I.read_attr

-- ==== text forms ===================================================================
local function attr_text(op, name)
  local t = C.oar_op_desc_attr_type(op.handle, name)
  local v
  if t == A.BLOCK then return "block[" .. block_attr_value(op.handle, name) .. "]" end
  v = read_attr(op.handle, name, t)
  local function one(x)
    if type(x) == "string" then return string.format("%q", x) end
    if type(x) == "number" then
      if x == math.floor(x) and math.abs(x) < 1e15 then return string.format("%d", x) end
      return string.format("%.6g", x)
    end
    return tostring(x)
  end
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = one(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return one(v)
end

local function slots_text(op, names_fn, args_fn)
  local parts = {}
  for _, slot in ipairs(names_fn(op)) do
    parts[#parts + 1] = slot .. "=[" .. table.concat(args_fn(op, slot), ", ") .. "]"
  end
  return table.concat(parts, ", ")
end

--- The op as one line of text: outputs, type, inputs, attributes
-- (also what `tostring(op)` prints).
-- @treturn string
-- @usage print(main:global_block():op(0):to_string())
function Operator:to_string()
  local attrs = {}
  local names = self:attr_names()
  table.sort(names)
  local where
  for _, name in ipairs(names) do
    if name == "op_callstack" then
      local cs = self:attr(name)
      where = cs and cs[1]
    else
      attrs[#attrs + 1] = name .. "=" .. attr_text(self, name)
    end
  end
  local s = string.format("%s(%s) -> (%s)", self.type, slots_text(self, self.input_names, self.input),
    slots_text(self, self.output_names, self.output))
  if #attrs > 0 then s = s .. " {" .. table.concat(attrs, ", ") .. "}" end
  if where then s = s .. "  # " .. where end
  return s
end
Operator.__tostring = Operator.to_string

local function var_line(v)
  local parts = { string.format("%s : %s %s", rawget(v, "name"), tostring(v.dtype), shape_text(v.shape)) }
  if v.type ~= "lod_tensor" then parts[#parts + 1] = tostring(v.type) end
  if v.lod_level > 0 then parts[#parts + 1] = "lod_level=" .. v.lod_level end
  if v.persistable then parts[#parts + 1] = "persistable" end
  if v.stop_gradient then parts[#parts + 1] = "stop_gradient" end
  return table.concat(parts, " ")
end

--- The block as text: its variables, then its ops, one per line. The listing
-- depends on the desc only, so a parsed copy lists the same.
-- @treturn string
-- @usage print(main:global_block():to_string())
function Block:to_string()
  local lines = { string.format("block %d (parent %d):", self.idx, self.parent_idx) }
  local fwd = self.forward_block_idx
  if fwd and fwd >= 0 then lines[1] = lines[1]:sub(1, -2) .. ", forward block " .. fwd .. ":" end
  for _, v in ipairs(self:vars()) do lines[#lines + 1] = "  var " .. var_line(v) end
  for i, op in ipairs(self:ops()) do lines[#lines + 1] = string.format("  op #%d %s", i - 1, op:to_string()) end
  return table.concat(lines, "\n")
end

--- The program as text, block by block (also `tostring(prog)`).
-- @treturn string
-- @usage print(main:to_string())
function Program:to_string()
  local parts = { string.format("Program (%d blocks)", self:num_blocks()) }
  for i = 0, self:num_blocks() - 1 do parts[#parts + 1] = self:block(i):to_string() end
  return table.concat(parts, "\n")
end
Program.__tostring = Program.to_string

local function dot_quote(s)
  return '"' .. s:gsub("\\", "\\\\"):gsub('"', '\\"') .. '"'
end

--- The program as Graphviz text: one cluster per block, ops as boxes,
-- variables as ellipses, edges variable -> op for inputs and op -> variable
-- for outputs (`oar.plot.program` renders it).
-- @treturn string
-- @usage io.open("main.dot", "w"):write(main:to_dot())   -- then: dot -Tsvg main.dot
function Program:to_dot()
  check_program(self, "Program:to_dot")
  local lines = { "digraph program {", "  rankdir=TB;", "  node [fontsize=10];" }
  local edges = {}
  local declared = {}   -- "b<idx>/<name>" -> node id
  local function var_node(block, name)
    local b = block
    while b do
      if b:has_var(name) then return "b" .. b.idx .. "_var_" .. name end
      b = b:parent()
    end
    return "b" .. block.idx .. "_var_" .. name
  end
  for i = 0, self:num_blocks() - 1 do
    local b = self:block(i)
    lines[#lines + 1] = string.format("  subgraph cluster_block_%d {", i)
    lines[#lines + 1] = string.format("    label=%s;", dot_quote(string.format("block %d (parent %d)", i, b.parent_idx)))
    for _, v in ipairs(b:vars()) do
      local id = "b" .. i .. "_var_" .. rawget(v, "name")
      declared[id] = true
      local label = string.format("%s\n%s %s", rawget(v, "name"), shape_text(v.shape), tostring(v.dtype))
      lines[#lines + 1] = string.format("    %s [shape=ellipse, label=%s%s];", dot_quote(id), dot_quote(label),
        v.persistable and ", style=filled, fillcolor=lightgrey" or "")
    end
    for j, op in ipairs(b:ops()) do
      local id = string.format("b%d_op_%d", i, j - 1)
      lines[#lines + 1] = string.format("    %s [shape=box, label=%s];", dot_quote(id), dot_quote(op.type))
      for _, name in ipairs(op:input_arg_names()) do
        local vid = var_node(b, name)
        edges[#edges + 1] = { vid, id, vid, b }
      end
      for _, name in ipairs(op:output_arg_names()) do
        local vid = var_node(b, name)
        edges[#edges + 1] = { id, vid, vid, b }
      end
    end
    lines[#lines + 1] = "  }"
  end
  for _, e in ipairs(edges) do
    if not declared[e[3]] then   -- an undeclared name (e.g. @EMPTY@): a plain node
      declared[e[3]] = true
      lines[#lines + 1] = string.format("  %s [shape=plaintext];", dot_quote(e[3]))
    end
    lines[#lines + 1] = string.format("  %s -> %s;", dot_quote(e[1]), dot_quote(e[2]))
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

