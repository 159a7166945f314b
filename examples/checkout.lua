-- examples/checkout.lua: a source checkout runs without installing. The
-- programs under examples/ and bench/ load this file with dofile before
-- their first require; it puts the checkout's lua/ on package.path and its
-- build/ on package.cpath (the checkout is found from where this file is).
-- (this file's own directory, however the caller spelled it: "examples/",
-- "/abs/examples/book/../", or "" when run from inside examples/)
local here = debug.getinfo(1, "S").source:match("^@(.-)checkout%.lua$")
if here then
  local root = here .. "../"
  package.path = root .. "lua/?.lua;" .. root .. "lua/?/init.lua;" .. package.path
  package.cpath = root .. "build/?.so;" .. package.cpath
end
