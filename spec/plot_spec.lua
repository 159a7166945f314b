-- oar.plot: the SVG's polylines map the data through the axes' own ticks;
-- ticks at round numbers; PNG through rsvg-convert; programs through
-- Graphviz; clear errors naming the Debian package when a tool is missing.
local oar = require("oar")
local plot = require("oar.plot")
local F = require("spec.helpers.files")

-- The ticks of one axis: {value, pixel} from <text class="xtick|ytick">.
local function ticks(svg, class)
  local out = {}
  for attrs, label in svg:gmatch('<text class="' .. class .. '" ([^>]*)>([^<]*)</text>') do
    local value = tonumber(attrs:match('data%-value="([^"]+)"'))
    local pos = tonumber(attrs:match((class == "xtick" and "x" or "y") .. '="([^"]+)"'))
    if class == "ytick" then pos = pos - 4 end   -- the label sits 4px below its tick
    out[#out + 1] = { value = value, pos = pos, label = label }
  end
  return out
end

-- Pixel = a + b * value, from the first and last tick.
local function mapping(t)
  local first, last = t[1], t[#t]
  local b = (last.pos - first.pos) / (last.value - first.value)
  return function(v) return first.pos + b * (v - first.value) end
end

-- The polylines of the series named `name`: lists of {x, y} pixels.
local function polylines(svg, name)
  local group = svg:match('<g class="series" data%-name="' .. name:gsub("%p", "%%%0") .. '"[^>]*>(.-)</g>')
  assert(group, "no series " .. name)
  local out = {}
  for pts in group:gmatch('<polyline points="([^"]*)"') do
    local line = {}
    for x, y in pts:gmatch("([%d%.%-]+),([%d%.%-]+)") do line[#line + 1] = { tonumber(x), tonumber(y) } end
    out[#out + 1] = line
  end
  return out
end

local function png_size(path)
  local bytes = F.read_bytes(path)
  assert.are.equal("\137PNG\r\n\26\n", bytes:sub(1, 8))
  local function u32(i) local a, b, c, d = bytes:byte(i, i + 3) return ((a * 256 + b) * 256 + c) * 256 + d end
  return u32(17), u32(21)
end

describe("oar.plot.ticks", function()
  it("puts ticks on 1, 2 or 5 times a power of ten enclosing the data", function()
    local a, b, step, values = plot.ticks(0, 938, 7)
    assert.are.same({ 0, 1000, 200 }, { a, b, step })
    assert.are.same({ 0, 200, 400, 600, 800, 1000 }, values)
    a, b, step, values = plot.ticks(0.26, 2.58, 6)
    assert.are.same({ 0, 3, 1 }, { a, b, step })
    a, b, step = plot.ticks(0.8012, 0.8934, 6)
    assert.are.same({ 0.8, 0.9, 0.02 }, { a, b, tonumber(string.format("%.10g", step)) })
    assert.are.equal("0.84", plot.tick_label(0.8400000000000001, 0.02))
    assert.are.equal("0.0", plot.tick_label(-1e-17, 0.5))  -- not "-0.0" nor "-1e-17"
    assert.are.equal("250", plot.tick_label(250, 50))
  end)

  it("widens a constant series around its value", function()
    local a, b = plot.ticks(5, 5, 6)
    assert.is_true(a < 5 and b > 5)
  end)
end)

describe("oar.plot.curves", function()
  local dir
  before_each(function()
    dir = F.tmpdir()
    os.execute("mkdir -p '" .. dir .. "'")
  end)
  after_each(function() F.rmtree(dir) end)

  it("draws each series' points where the axes' ticks put them", function()
    local xs = { 0, 1, 2, 3, 4, 5 }
    local loss = { 2.3, 1.1, 0.7, 0.55, 0.5, 0.48 }
    local val = { 2.2, 0.9, 0.6 }
    local svg = oar.plot.curves{ file = dir .. "/c.svg", x = xs, series = {
      train = loss, validation = { x = { 0, 2.5, 5 }, y = val } },
      title = "loss <mlp>", xlabel = "epoch", ylabel = "cross entropy" }
    assert.are.equal(svg, F.read_bytes(dir .. "/c.svg"))
    local xt, yt = ticks(svg, "xtick"), ticks(svg, "ytick")
    assert.are.same({ "0", "1", "2", "3", "4", "5" }, (function()
      local l = {} for i, t in ipairs(xt) do l[i] = t.label end return l end)())
    assert.are.same({ "0.0", "0.5", "1.0", "1.5", "2.0", "2.5" }, (function()
      local l = {} for i, t in ipairs(yt) do l[i] = t.label end return l end)())
    local px, py = mapping(xt), mapping(yt)
    local function check(name, xv, yv)
      local lines = polylines(svg, name)
      assert.are.equal(1, #lines)
      assert.are.equal(#yv, #lines[1])
      for i = 1, #yv do
        assert.is_true(math.abs(lines[1][i][1] - px(xv[i])) < 0.011, name .. " x " .. i)
        assert.is_true(math.abs(lines[1][i][2] - py(yv[i])) < 0.011, name .. " y " .. i)
      end
    end
    check("train", xs, loss)
    check("validation", { 0, 2.5, 5 }, val)
    -- y grows upward, and the texts are there, escaped
    assert.is_true(py(2) < py(1))
    assert.truthy(svg:find('<text class="title"[^>]*>loss &lt;mlp&gt;</text>'))
    assert.truthy(svg:find('<text class="xlabel"[^>]*>epoch</text>'))
    assert.truthy(svg:find('<text class="ylabel"[^>]*>cross entropy</text>'))
    -- legend: sorted names, each with its series' colour
    local legend = svg:match('<g class="legend">(.-)</g>')
    local names, colours = {}, {}
    for c, n in legend:gmatch('stroke="(#%x+)" stroke%-width="2.5"/><text[^>]*>([^<]*)</text>') do
      names[#names + 1], colours[#colours + 1] = n, c
    end
    assert.are.same({ "train", "validation" }, names)
    assert.truthy(svg:find('data%-name="train" stroke="' .. colours[1] .. '"'))
    assert.truthy(svg:find('data%-name="validation" stroke="' .. colours[2] .. '"'))
  end)

  it("leaves a gap at NaN and infinite values", function()
    local svg = oar.plot.curves{ series = { s = { 1, 2, 0 / 0, 4, 5, math.huge, 7 } } }
    local lines = polylines(svg, "s")
    assert.are.equal(3, #lines)
    assert.are.same({ 2, 2, 1 }, { #lines[1], #lines[2], #lines[3] })
  end)

  it("puts the legend in the corner the curves leave empty", function()
    local up = oar.plot.curves{ series = { a = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 } } }
    local down = oar.plot.curves{ series = { a = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 } } }
    local function legend_x(svg) return tonumber(svg:match('<g class="legend"><rect x="([%d%.]+)"')) end
    local function axis_left(svg) return ticks(svg, "xtick")[1].pos end
    assert.is_true(legend_x(up) - axis_left(up) < 20)        -- rising: top left is empty
    assert.is_true(legend_x(down) - axis_left(down) > 300)   -- falling: top right
  end)

  it("reads a metrics log: x and y columns, rows holding both", function()
    local file = dir .. "/run.csv"
    local log = oar.metrics.logger{ file = file, columns = { "epoch", "step", "loss", "val_loss" } }
    log:log{ epoch = 1, step = 100, loss = 0.9 }
    log:log{ epoch = 1, step = 200, loss = 0.6, val_loss = 0.7 }
    log:log{ epoch = 2, step = 300, loss = 0.5 }
    log:log{ epoch = 2, step = 400, loss = 0.4, val_loss = 0.45 }
    log:close()
    local svg = oar.plot.curves{ from = file, labels = { val_loss = "validation" } }
    assert.truthy(svg:find('<text class="xlabel"[^>]*>step</text>'))  -- x defaults to step
    local px, py = mapping(ticks(svg, "xtick")), mapping(ticks(svg, "ytick"))
    local val = polylines(svg, "validation")[1]
    assert.are.equal(2, #val)
    assert.is_true(math.abs(val[2][1] - px(400)) < 0.011 and math.abs(val[2][2] - py(0.45)) < 0.011)
    assert.are.equal(4, #polylines(svg, "loss")[1])
    local only = oar.plot.curves{ from = oar.metrics.read(file), x = "epoch", y = "loss" }
    assert.are.equal(4, #polylines(only, "loss")[1])
    assert.is_nil(only:find('data-name="val_loss"', 1, true))
  end)

  it("writes a PNG of the requested size through rsvg-convert (which also proves the SVG well-formed)", function()
    local file = dir .. "/c.png"
    oar.plot.curves{ file = file, series = { a = { 3, 1, 2 } }, width = 500, height = 300, title = "t" }
    local w, h = png_size(file)
    assert.are.same({ 500, 300 }, { w, h })
  end)

  it("names the Debian package when rsvg-convert is missing", function()
    local saved = plot.commands.rsvg_convert
    plot.commands.rsvg_convert = "oar-spec-no-such-tool"
    local ok, err = pcall(oar.plot.curves, { file = dir .. "/c.png", series = { a = { 1, 2 } } })
    plot.commands.rsvg_convert = saved
    assert.is_false(ok)
    assert.truthy(err:find("apt-get install librsvg2-bin", 1, true))
  end)

  it("refuses unknown arguments and bad series", function()
    local ok, err = pcall(function() oar.plot.curves{ series = { a = { 1 } }, tilte = "x" } end)
    assert.is_false(ok)
    assert.truthy(err:find("plot_spec.lua:%d+: oar.plot.curves: unknown argument 'tilte' %(did you mean 'title'%?%)"))
    assert.has_error(function() oar.plot.curves{ series = { a = { 1, "2" } } } end)
    assert.has_error(function() oar.plot.curves{ series = { a = { x = { 1, 2 }, y = { 1 } } } } end)
    assert.has_error(function() oar.plot.curves{ file = dir .. "/c.jpg", series = { a = { 1 } } } end)
    assert.has_error(function() oar.plot.curves{} end)
    local ok2, err2 = pcall(oar.plot.curves, { from = { names = { "loss" }, n = 1, columns = { loss = { 1 } } }, y = "los" })
    assert.is_false(ok2)
    assert.truthy(err2:find("did you mean 'loss'", 1, true))
  end)
end)

describe("oar.plot.program", function()
  local dir
  local main
  before_each(function()
    dir = F.tmpdir()
    os.execute("mkdir -p '" .. dir .. "'")
    main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local x = oar.layers.data{ name = "x", shape = { 3 } }
      oar.layers.fc{ input = x, size = 2, act = "relu" }
    end)
  end)
  after_each(function() F.rmtree(dir) end)

  it("writes the Graphviz text as .dot and lays it out as .svg and .png", function()
    assert.are.equal(dir .. "/p.dot", oar.plot.program(main, dir .. "/p.dot"))
    assert.are.equal(main:to_dot(), F.read_bytes(dir .. "/p.dot"))
    oar.plot.program(main, dir .. "/p.svg")
    local svg = F.read_bytes(dir .. "/p.svg")
    assert.truthy(svg:find("<svg", 1, true))
    for _, op in ipairs({ "mul", "elementwise_add", "relu" }) do
      assert.truthy(svg:find(">" .. op .. "</text>", 1, true), op)
    end
    oar.plot.program(main, dir .. "/p.png")
    local w, h = png_size(dir .. "/p.png")
    assert.is_true(w > 50 and h > 50)
  end)

  it("names the Debian package graphviz when dot is missing, and checks its arguments", function()
    local saved = plot.commands.dot
    plot.commands.dot = "oar-spec-no-such-tool"
    local ok, err = pcall(oar.plot.program, main, dir .. "/p.svg")
    plot.commands.dot = saved
    assert.is_false(ok)
    assert.truthy(err:find("apt-get install graphviz", 1, true))
    assert.has_error(function() oar.plot.program(main, dir .. "/p.gif") end)
    assert.has_error(function() oar.plot.program("main", dir .. "/p.svg") end)
  end)
end)
