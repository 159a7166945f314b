-- Nothing in the checkout points outside it: no source, spec, script or
-- page names a file that only existed beside the repository (the design
-- notes it was written from, a shared folder). The design is in
-- docs/design.md, the API in docs/api.md. The patterns are built from
-- pieces so this file does not match itself.
local PATTERNS = {
  "DESIGN" .. "\\.md", "API" .. "\\.md", "seeds" .. "/", "/work" .. "/shared", "\\.\\./" .. "shared",
}

describe("references", function()
  it("point inside the checkout", function()
    local cmd = "grep -rnE '" .. table.concat(PATTERNS, "|") .. "'"
      .. " --include='*.c' --include='*.h' --include='*.lua' --include='*.cu' --include='*.md'"
      .. " --include='*.sh' --include='*.ops' --include=Makefile"
      .. " --exclude-dir=tree --exclude-dir=build --exclude-dir=.git . 2>/dev/null"
    local p = io.popen(cmd)
    local hits = p:read("*a")
    p:close()
    -- grep -E is case sensitive: docs/api.md, this checkout's page, passes
    assert(hits == "", "references outside the checkout:\n" .. hits)
  end)
end)
