-- The operator reference (tools/op_reference.lua, written by `make doc`)
-- comes from the op declarations: every op declared in a src/ops/*.ops
-- file has its doc, its slots' docs and its attributes' kinds, defaults,
-- ranges, choices and docs there. No op is defined by hand any more: every
-- registered op has its declaration's doc.
local files = require("spec.helpers.files")

local read = files.read_bytes

local function declared_ops()
  local ops = {}
  local p = io.popen("cat src/ops/*.ops")
  local text = p:read("*a")
  p:close()
  for name in text:gmatch('\nop%s*"([%w_]+)"') do ops[#ops + 1] = name end
  return ops, text
end

describe("the operator reference", function()
  local dir = files.tmpdir()
  local out = dir .. "/ops.md"
  local text

  setup(function()
    assert(os.execute("mkdir -p " .. dir) == 0)
    local p = io.popen("luajit tools/op_reference.lua " .. out .. " 2>&1")
    local log = p:read("*a")
    assert(p:close(), log)
    text = read(out)
  end)

  it("documents fc from its declaration: slots, attributes with kind, default, range, choices and meaning", function()
    local sec = text:match("\n## fc\n(.-)\n## ")
    assert.is_string(sec)
    assert.matches("Paddle's fused fully connected op", sec, 1, true)
    assert.matches("- `Bias` (*optional*): the [N] or [1, N] bias", sec, 1, true)
    assert.matches("| `in_num_col_dims` | int | 1 | [1, 9] | Input's dims before this index make the rows", sec, 1, true)
    assert.matches('| `activation_type` | string | "" | "", relu | the activation after the bias', sec, 1, true)
    assert.matches("Gradient: none.", sec, 1, true)
  end)

  it("has a documented section for every op a declaration file declares", function()
    -- names built in loops (the activations) are checked through the registry below
    local lib = require("oar.lib")
    local ffi = require("ffi")
    local C = lib.load_op_api()
    local n = 0
    for i = 0, C.oar_op_num_registered() - 1 do
      local t = ffi.string(C.oar_op_registered_at(i))
      local def = C.oar_registry_op(t)
      if def.doc ~= nil then
        n = n + 1
        local sec = text:match("\n## " .. t:gsub("%p", "%%%0") .. "\n\n([^\n]*)")
        assert.are.equal(ffi.string(def.doc), sec, t)
      end
    end
    local named = declared_ops()
    assert.is_true(n >= #named, ("%d documented ops, %d named in .ops files"):format(n, #named))
    assert.matches("\n## relu\n\nOut = max(x, 0), elementwise.", text, 1, true)
  end)
end)

describe("the op declarations", function()
  local function lines(cmd)
    local p = io.popen(cmd)
    local out = {}
    for l in p:lines() do out[#out + 1] = l end
    p:close()
    return out
  end

  it("are the only way ops register: no src/ops/*.c or kernel defines or registers an op by hand", function()
    -- the generated header registers each declared op; a hand oar_op_def_t would bypass the declaration
    local hits = lines("grep -n 'OAR_REGISTER_OP\\|oar_op_def_t' src/ops/*.c src/ops/*.h kernels/*/*.c kernels/*/*.cu 2>/dev/null")
    assert.are.same({}, hits)
    -- and every declaration file is defined by its .c, once, at the end
    for _, ops in ipairs(lines("ls src/ops/*.ops")) do
      local c = read((ops:gsub("%.ops$", ".c")))
      local family = ops:match("([%w_]+)%.ops$")
      assert.matches('#define OAR_OPS_DEFINE\n#include "ops/' .. family .. '.h"[^\n]*%s*$', c, nil, false, ops)
    end
  end)

  it("give every registered op its doc", function()
    local ffi = require("ffi")
    local C = require("oar.lib").load_op_api()
    local missing = {}
    for i = 0, C.oar_op_num_registered() - 1 do
      local t = ffi.string(C.oar_op_registered_at(i))
      if C.oar_registry_op(t).doc == nil then missing[#missing + 1] = t end
    end
    assert.is_true(C.oar_op_num_registered() > 300)
    assert.are.same({}, missing)
  end)
end)

describe("layers that map one to one onto an op", function()
  local oar = require("oar")
  local layers = oar.layers
  local D = require("oar.op_decl")

  it("take their arguments and defaults from the op's declaration (the activations)", function()
    local src = assert(io.open("lua/oar/layers/nn.lua")):read("*a")
    local acts = assert(loadstring("return " .. src:match("local activations = (%b{})")))()
    local n = 0
    for op, documented in pairs(acts) do
      n = n + 1
      assert.is_function(layers[op], op)
      local seen = {}
      for _, d in ipairs(D.attrs(op)) do
        seen[d.name] = true
        assert.is_not_nil(documented[d.name], op .. ": the table does not document declared '" .. d.name .. "'")
        if type(d.default) == "number" then
          assert.is_true(math.abs(documented[d.name] - d.default) <= 1e-6 * math.max(1, math.abs(d.default)),
            ("%s.%s: the table says %s, the declaration %s"):format(op, d.name, documented[d.name], d.default))
        else
          assert.are.equal(d.default, documented[d.name], op .. "." .. d.name)
        end
      end
      for k in pairs(documented) do assert.is_true(seen[k], op .. ": '" .. k .. "' is not declared") end
    end
    assert.is_true(n > 40)
  end)

  it("refuse an argument the declaration does not have, naming it", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local ok, err = pcall(layers.leaky_relu, { x = x, alpah = 0.1 })
      assert.is_false(ok)
      assert.matches("alpah", tostring(err), 1, true)
      assert.matches("alpha", tostring(err), 1, true)
      -- a declared argument the old hand list lacked: gelu's approximate
      local y = layers.gelu{ x = x, approximate = true }
      assert.are.equal(true, y.block.program:global_block():ops()[#y.block.program:global_block():ops()]:attr("approximate"))
    end)
  end)
end)
