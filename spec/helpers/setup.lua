-- spec/helpers/setup.lua — busted's helper for every spec file (.busted's
-- `helper`), run once per busted process before the specs load.
--
--   - failure messages of bounded size for big tables, and
--     assert.same_array (spec/helpers/bounded.lua);
--   - with `-Xhelper progress=FILE` (tools/run_specs passes it), FILE always
--     holds one line saying what the process is doing: loading a file, in a
--     describe block, in a test, or after a test. When run_specs kills a file
--     at its time limit, that line says where it hung.
require("spec.helpers.bounded").install()

local progress
for _, a in ipairs(arg or {}) do
  progress = progress or a:match("^progress=(.+)$")
end

if progress then
  local busted = require("busted")

  -- rewritten at each step: only the last step matters
  local function note(text)
    local f = io.open(progress, "w")
    if f then
      f:write(text, "\n")
      f:close()
    end
  end

  -- "describe ... it": the name TAP prints for the test
  local function full_name(element)
    local names = { element.name or element.descriptor }
    local parent = busted.parent(element)
    while parent and (parent.name or parent.descriptor) and parent.descriptor ~= "file" do
      table.insert(names, 1, parent.name or parent.descriptor)
      parent = busted.parent(parent)
    end
    return table.concat(names, " ")
  end

  -- a subscriber that never stops the others (busted's mediator calls the
  -- next one only when it gets `nil, true`) nor fails the step
  local function on(event, text)
    busted.subscribe(event, function(element)
      pcall(function() note(text(element)) end)
      return nil, true
    end)
  end
  on({ "file", "start" }, function(file) return "loading the file " .. tostring(file.name) end)
  on({ "describe", "start" }, function(d) return "in the describe block (outside its tests): " .. full_name(d) end)
  on({ "test", "start" }, function(t) return "in the test: " .. full_name(t) end)
  on({ "test", "end" }, function(t)
    return "after the test: " .. full_name(t) .. " (in an after_each, a teardown or the next before_each)"
  end)
  on({ "file", "end" }, function(file) return "done with the file " .. tostring(file.name) end)
end
