-- spec/helpers/expect_error.lua — asserting that a call fails with a message
-- that mentions given strings.
--
--   local expect_error = require("spec.helpers.expect_error")
--   local msg = expect_error(function() T.run{ ... } end, "gru", "'Input'")
local assert = require("luassert")   -- busted's global is not visible in modules

-- calls fn (no arguments), asserts it raises an error whose text contains
-- each of the plain strings ...; returns that text
return function(fn, ...)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  err = tostring(err)
  for _, pat in ipairs({ ... }) do
    assert.is_truthy(err:find(pat, 1, true), ("error %q does not mention %q"):format(err, pat))
  end
  return err
end
