-- Structural guard (issue 21): inference sizes every output, so no kernel
-- source resizes a tensor itself. A data-dependent shape goes through
-- oar_k_output_resized (src/kernel_ctx.c), a private scratch tensor
-- through oar_tensor_new_sized.
local ROOT = io.popen("pwd"):read("*l")

local function kernel_sources()
  local files = {}
  local p = io.popen("find '" .. ROOT .. "/kernels' -type f \\( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \\)")
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  return files
end

describe("kernel sources", function()
  it("exist (the guard reads the tree)", function()
    assert.is_true(#kernel_sources() > 10)
  end)

  it("never call oar_tensor_resize", function()
    local hits = {}
    for _, f in ipairs(kernel_sources()) do
      local n = 0
      for line in io.lines(f) do
        n = n + 1
        if line:find("oar_tensor_resize", 1, true) then
          hits[#hits + 1] = f:sub(#ROOT + 2) .. ":" .. n .. ": " .. line
        end
      end
    end
    assert.are.equal("", table.concat(hits, "\n"))
  end)
end)
