--- oar.plot: pictures of training curves and of programs.
--
--   oar.plot.curves{ file = "loss.svg", series = { train = losses, test = {x = steps, y = test_losses} },
--                    title = "mlp", xlabel = "step", ylabel = "loss" }
--   oar.plot.curves{ file = "loss.png", from = "run.csv", x = "step", y = {"loss", "val_loss"} }
--   oar.plot.program(main_program, "net.svg")
--
-- Curves are drawn as SVG by this module (axes, ticks at round numbers,
-- legend, title, labels); a .png is that SVG converted by rsvg-convert
-- (Debian's librsvg2-bin). Programs are drawn by Graphviz's dot from
-- Program:to_dot().
-- @module oar.plot
local argcheck = require("oar.argcheck")
local framework = require("oar.framework")

local M = {}

-- The external programs used; a full path may be put here.
M.commands = { rsvg_convert = "rsvg-convert", dot = "dot" }

local PALETTE = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" }

local FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"
local CHAR_W = 7      -- rough width of a 12px character, for layout
local FONT_PX = 12

-- -------------------------------------------------------------------------
-- Shell helpers
-- -------------------------------------------------------------------------

local function sh_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function have_command(cmd)
  local p = io.popen("command -v " .. sh_quote(cmd) .. " 2>/dev/null")
  local out = p:read("*a")
  p:close()
  return out:match("%S") ~= nil
end

-- Runs a shell command; returns ok, its output (stdout and stderr).
local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("exit=(%d+)%s*$"))
  return code == 0, (out:gsub("exit=%d+%s*$", ""))
end

local function write_file(path, text, who)
  local f, err = io.open(path, "wb")
  if not f then error(string.format("%s: cannot write %s: %s", who, path, tostring(err)), 0) end
  f:write(text)
  f:close()
end

local function extension(file)
  local ext = file:match("%.([%w]+)$")
  return ext and ext:lower()
end

-- Converts an SVG text to a PNG file with rsvg-convert.
local function svg_to_png(svg, file, who)
  local cmd = M.commands.rsvg_convert
  if not have_command(cmd) then
    error(string.format("%s: writing %s (PNG) needs rsvg-convert, which is not installed: " ..
                        "apt-get install librsvg2-bin (or write an .svg file)", who, file), 0)
  end
  local tmp = os.tmpname()
  write_file(tmp, svg, who)
  local ok, out = run(string.format("%s -f png -o %s %s", sh_quote(cmd), sh_quote(file), sh_quote(tmp)))
  os.remove(tmp)
  if not ok then error(string.format("%s: rsvg-convert could not write %s: %s", who, file, out), 0) end
end

-- -------------------------------------------------------------------------
-- Axis ticks at round numbers (Heckbert, "Nice numbers for graph labels",
-- Graphics Gems, 1990)
-- -------------------------------------------------------------------------

-- A 1, 2 or 5 times a power of ten close to x (rounded, or at least x).
local function nice_number(x, round)
  local e = math.floor(math.log10(x))
  local f = x / 10 ^ e
  local nf
  if round then
    if f < 1.5 then nf = 1 elseif f < 3 then nf = 2 elseif f < 7 then nf = 5 else nf = 10 end
  else
    if f <= 1 then nf = 1 elseif f <= 2 then nf = 2 elseif f <= 5 then nf = 5 else nf = 10 end
  end
  return nf * 10 ^ e
end

--- Ticks at round numbers for data in [lo, hi] (1, 2 or 5 times a power
-- of ten apart).
-- @tparam number lo
-- @tparam number hi
-- @tparam[opt=6] int count about how many ticks
-- @treturn number the axis' low end (a multiple of the step)
-- @treturn number the axis' high end
-- @treturn number the step
-- @treturn {number,...} the tick values
-- @usage local a, b, step, values = oar.plot.ticks(0.13, 0.92)   --> 0, 1, 0.2, {0, 0.2, ..., 1}
function M.ticks(lo, hi, count)
  count = count or 6
  if lo == hi then
    local d = lo == 0 and 1 or math.abs(lo) * 0.1
    lo, hi = lo - d, hi + d
  end
  local range = nice_number(hi - lo, false)
  local step = nice_number(range / (count - 1), true)
  local a = math.floor(lo / step + 1e-9) * step
  local b = math.ceil(hi / step - 1e-9) * step
  local values = {}
  local n = math.floor((b - a) / step + 0.5)
  for i = 0, n do
    local v = a + i * step
    if math.abs(v) < step * 1e-9 then v = 0 end
    values[#values + 1] = v
  end
  return a, b, step, values
end

local function tick_label(v, step)
  if math.abs(v) < step * 1e-9 then v = 0 end   -- a rounding residue, not a value
  if math.abs(v) >= 1e6 or (v ~= 0 and math.abs(v) < 1e-4) then return (string.format("%g", v)) end
  local decimals = string.format("%d", math.max(0, -math.floor(math.log10(step) + 1e-9)))
  local s = string.format("%." .. decimals .. "f", v)
  if s:match("^%-0%.?0*$") then s = s:sub(2) end
  return s
end

--- A tick's label: as many decimals as the step needs (%g for very large
-- or small values).
-- @function tick_label
-- @tparam number v the tick
-- @tparam number step the ticks' step
-- @treturn string
-- @usage print(oar.plot.tick_label(0.4, 0.2))   --> 0.4
M.tick_label = tick_label

-- -------------------------------------------------------------------------
-- Series
-- -------------------------------------------------------------------------

local function is_finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end

local function check_numbers(list, what, who)
  if type(list) ~= "table" then error(string.format("%s: %s must be a list of numbers, got %s", who, what, type(list)), 0) end
  local n = #list
  for k in pairs(list) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
      error(string.format("%s: %s must be a list of numbers (keys 1..n), found key %s", who, what, tostring(k)), 0)
    end
  end
  for i = 1, n do
    if type(list[i]) ~= "number" then
      error(string.format("%s: %s[%d] must be a number, got %s", who, what, i, type(list[i])), 0)
    end
  end
  return n
end

-- One series from a list of y or {x=, y=}, x defaulting to the shared x or 1..n.
local function make_series(name, s, shared_x, who)
  local xs, ys
  if type(s) == "table" and (s.y ~= nil or s.x ~= nil) then
    for k in pairs(s) do
      if k ~= "x" and k ~= "y" and k ~= "name" then
        error(string.format("%s: series '%s' has an unknown field '%s' (expected x and y)", who, name, tostring(k)), 0)
      end
    end
    ys, xs = s.y, s.x
  else
    ys = s
  end
  local n = check_numbers(ys, "series '" .. name .. "'", who)
  if xs == nil then xs = shared_x end
  if xs == nil then
    xs = {}
    for i = 1, n do xs[i] = i end
  else
    local nx = check_numbers(xs, "the x of series '" .. name .. "'", who)
    if nx ~= n then
      error(string.format("%s: series '%s' has %d values but its x has %d", who, name, n, nx), 0)
    end
  end
  return { name = name, x = xs, y = ys }
end

-- The series of a curves call, in legend order.
local function collect_series(args, who)
  local list = {}
  local shared_x = args.x
  if args.from ~= nil then
    local metrics = require("oar.metrics")
    local data = args.from
    if type(data) == "string" then data = metrics.read(data)
    elseif type(data) ~= "table" or type(data.columns) ~= "table" then
      error(who .. ": from must be a metrics file name or the table oar.metrics.read returns", 0)
    end
    if shared_x ~= nil and type(shared_x) ~= "string" then
      error(who .. ": with from=, x names a column (e.g. \"step\"), got " .. type(shared_x), 0)
    end
    local xcol = shared_x
    if xcol == nil then
      if data.columns.step then xcol = "step" elseif data.columns.epoch then xcol = "epoch" end
    end
    local ycols = args.y
    if type(ycols) == "string" then ycols = { ycols } end
    if ycols == nil then
      ycols = {}
      for _, name in ipairs(data.names) do
        local numeric = false
        for r = 1, data.n do if type(data.columns[name][r]) == "number" then numeric = true break end end
        if numeric and name ~= xcol and name ~= "epoch" and name ~= "step" then ycols[#ycols + 1] = name end
      end
    elseif type(ycols) ~= "table" then
      error(who .. ": y must be a column name or a list of them, got " .. type(ycols), 0)
    end
    local ok, err = pcall(function()
      for _, name in ipairs(ycols) do
        local xs, ys = metrics.series(data, xcol, name)
        list[#list + 1] = { name = name, x = xs, y = ys }
      end
    end)
    if not ok then error(who .. ": " .. tostring(err):gsub("^oar%.metrics%.series: ", ""), 0) end
    if args.xlabel == nil then args.xlabel = xcol end
  end
  if args.y ~= nil and args.from == nil then
    error(who .. ": y= picks columns of a metrics log given by from=; pass the values with series=", 0)
  end
  if shared_x ~= nil and args.from == nil then check_numbers(shared_x, "x", who) end
  local series = args.series
  if series ~= nil then
    if type(series) ~= "table" then error(who .. ": series must be a table of name = values, got " .. type(series), 0) end
    local shared = args.from == nil and shared_x or nil
    if series[1] ~= nil then   -- an ordered list of {name=, y=, x=}
      for i, s in ipairs(series) do
        if type(s) ~= "table" or type(s.name) ~= "string" then
          error(string.format("%s: series[%d] must be a table {name=, y=, x=}", who, i), 0)
        end
        list[#list + 1] = make_series(s.name, s, shared, who)
      end
    else
      local names = {}
      for k in pairs(series) do
        if type(k) ~= "string" then error(who .. ": series' keys must be names (strings), got " .. tostring(k), 0) end
        names[#names + 1] = k
      end
      table.sort(names)
      for _, name in ipairs(names) do list[#list + 1] = make_series(name, series[name], shared, who) end
    end
  end
  if #list == 0 then error(who .. ": nothing to draw: give series= or from=", 0) end
  return list
end

-- -------------------------------------------------------------------------
-- SVG
-- -------------------------------------------------------------------------

local function xml(s)
  return (tostring(s):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                         ['"'] = "&quot;", ["'"] = "&#39;" }))
end

local function num(v) return (string.format("%.2f", v):gsub("%.?0+$", "")) end

-- The legend's corner: the one whose box covers the fewest drawn points
-- (points sampled along each segment every few pixels), counting a margin
-- around the box so that no curve runs along its edge.
local PAD = 8
local function legend_corner(boxes, paths)
  local best, best_count
  for _, box in ipairs(boxes) do
    local count = 0
    for _, pts in ipairs(paths) do
      for i = 1, #pts do
        local x1, y1 = pts[i][1], pts[i][2]
        local x0, y0 = x1, y1
        if i > 1 then x0, y0 = pts[i - 1][1], pts[i - 1][2] end
        local steps = math.max(1, math.floor(math.max(math.abs(x1 - x0), math.abs(y1 - y0)) / 4))
        for s = (i > 1 and 1 or 0), steps do
          local px, py = x0 + (x1 - x0) * s / steps, y0 + (y1 - y0) * s / steps
          if px >= box.x - PAD and px <= box.x + box.w + PAD and py >= box.y - PAD and py <= box.y + box.h + PAD then
            count = count + 1
          end
        end
      end
    end
    if not best_count or count < best_count then best, best_count = box, count end
  end
  return best
end

local CURVES_ARGS = { file = true, series = true, x = true, y = true, from = true, title = true,
                      xlabel = true, ylabel = true, width = true, height = true, markers = true,
                      labels = true }

--- Draws one or more series as a line chart (SVG; a .png is the SVG
-- converted by rsvg-convert). NaN and infinite values leave a gap.
-- @tparam table args keyword arguments:
-- @tparam[opt] string args.file .svg or .png; nil: only return the SVG
-- @tparam[opt] table args.series name = {y1, y2, ...} or name = {x = {...}, y = {...}}, or a
-- list of {name=, x=, y=} to fix the legend's order (otherwise the legend is sorted by name)
-- @tparam[opt] {number,...}|string args.x the x of every series given as a plain list
-- (default 1..n); with `from`, the x column's name (default step or epoch)
-- @tparam[opt] string|table args.from a metrics log: a file name or oar.metrics.read's table
-- @tparam[opt] string|{string,...} args.y with `from`: the column(s) to draw (default every numeric one)
-- @tparam[opt] string args.title
-- @tparam[opt] string args.xlabel
-- @tparam[opt] string args.ylabel
-- @tparam[opt=640] number args.width pixels, 100..10000
-- @tparam[opt=400] number args.height pixels, 100..10000
-- @tparam[opt] bool args.markers dots on the points (default: for series of at most 50 points)
-- @tparam[opt] table args.labels legend text per series name, e.g. `{val_loss = "validation"}`
-- (names of series not drawn are ignored)
-- @treturn string the SVG text
-- @raise on a bad argument, or when a .png is asked for and rsvg-convert is missing
-- @usage
-- oar.plot.curves{file = "loss.svg", series = {train = losses}, xlabel = "step", ylabel = "loss"}
-- oar.plot.curves{file = "loss.png", from = "run.csv", x = "step", y = {"loss", "val_loss"}}
function M.curves(args)
  local who = "oar.plot.curves"
  if type(args) ~= "table" then
    error(who .. ": expects a table of arguments {file=, series=, ...}, got " .. type(args), 2)
  end
  argcheck.keys(who, args, CURVES_ARGS)
  local a = {}
  for k, v in pairs(args) do a[k] = v end
  if a.file ~= nil and (type(a.file) ~= "string" or a.file == "") then
    error(who .. ": file must be a path ending in .svg or .png, got " .. tostring(a.file), 2)
  end
  local ext = a.file and extension(a.file)
  if a.file and ext ~= "svg" and ext ~= "png" then
    error(string.format("%s: file must end in .svg or .png, got '%s'", who, a.file), 2)
  end
  for _, k in ipairs({ "title", "xlabel", "ylabel" }) do
    if a[k] ~= nil and type(a[k]) ~= "string" then
      error(string.format("%s: %s must be a string, got %s", who, k, type(a[k])), 2)
    end
  end
  for _, k in ipairs({ "width", "height" }) do
    if a[k] ~= nil and (type(a[k]) ~= "number" or a[k] < 100 or a[k] > 10000) then
      error(string.format("%s: %s must be a number of pixels in 100..10000, got %s", who, k, tostring(a[k])), 2)
    end
  end
  local ok, list = pcall(collect_series, a, who)
  if not ok then error((tostring(list):gsub("^[^:\n]*%.lua:%d+: ", "")), 2) end
  if a.labels ~= nil then
    if type(a.labels) ~= "table" then error(who .. ": labels must be a table of series name = legend text", 2) end
    for k, v in pairs(a.labels) do   -- names not drawn are allowed: one table may serve several charts
      if type(v) ~= "string" then error(string.format("%s: labels.%s must be a string", who, tostring(k)), 2) end
    end
    for _, s in ipairs(list) do s.name = a.labels[s.name] or s.name end
  end
  local svg = M.svg(list, a)
  if a.file then
    local wok, err = pcall(function()
      if ext == "svg" then write_file(a.file, svg, who) else svg_to_png(svg, a.file, who) end
    end)
    if not wok then error(err, 2) end
  end
  return svg
end

--- The SVG of a list of series (what curves draws, without checks or a file).
-- @tparam {table,...} list series `{name=, x=, y=}`
-- @tparam table opts as curves' (title, xlabel, ylabel, width, height, markers)
-- @treturn string the SVG text
-- @usage local svg = oar.plot.svg({{name = "loss", x = {1, 2, 3}, y = {0.9, 0.5, 0.3}}}, {title = "loss"})
function M.svg(list, opts)
  local W, H = opts.width or 640, opts.height or 400
  local xmin, xmax, ymin, ymax = math.huge, -math.huge, math.huge, -math.huge
  for _, s in ipairs(list) do
    for i = 1, #s.y do
      local x, y = s.x[i], s.y[i]
      if is_finite(x) and is_finite(y) then
        xmin, xmax = math.min(xmin, x), math.max(xmax, x)
        ymin, ymax = math.min(ymin, y), math.max(ymax, y)
      end
    end
  end
  if xmin == math.huge then xmin, xmax, ymin, ymax = 0, 1, 0, 1 end  -- no finite point: empty axes
  local x0, x1, xstep, xticks = M.ticks(xmin, xmax, 7)
  local y0, y1, ystep, yticks = M.ticks(ymin, ymax, 6)
  local ylabels, widest = {}, 0
  for i, v in ipairs(yticks) do
    ylabels[i] = tick_label(v, ystep)
    widest = math.max(widest, #ylabels[i])
  end
  local left = 16 + widest * CHAR_W + (opts.ylabel and 24 or 0)
  local right = 24
  local top = opts.title and 44 or 20
  local bottom = 36 + (opts.xlabel and 22 or 0)
  local pw, ph = W - left - right, H - top - bottom
  local function px(x) return left + (x - x0) / (x1 - x0) * pw end
  local function py(y) return top + ph - (y - y0) / (y1 - y0) * ph end

  local out = {}
  local function add(s) out[#out + 1] = s end
  add('<?xml version="1.0" encoding="UTF-8"?>')
  add(string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" ' ..
                    'font-family="%s" font-size="%d">', W, H, W, H, FONT, FONT_PX))
  add(string.format('<rect class="background" x="0" y="0" width="%d" height="%d" fill="white"/>', W, H))
  if opts.title then
    add(string.format('<text class="title" x="%s" y="26" text-anchor="middle" font-size="15" font-weight="bold">%s</text>',
                      num(left + pw / 2), xml(opts.title)))
  end
  -- grid and ticks
  add('<g class="grid" stroke="#e4e4e4" stroke-width="1">')
  for _, v in ipairs(xticks) do
    add(string.format('<line x1="%s" y1="%s" x2="%s" y2="%s"/>', num(px(v)), num(top), num(px(v)), num(top + ph)))
  end
  for _, v in ipairs(yticks) do
    add(string.format('<line x1="%s" y1="%s" x2="%s" y2="%s"/>', num(left), num(py(v)), num(left + pw), num(py(v))))
  end
  add('</g>')
  add(string.format('<g class="axes" stroke="#333333" stroke-width="1"><line x1="%s" y1="%s" x2="%s" y2="%s"/>' ..
                    '<line x1="%s" y1="%s" x2="%s" y2="%s"/></g>',
                    num(left), num(top + ph), num(left + pw), num(top + ph), num(left), num(top), num(left), num(top + ph)))
  add('<g class="xticks" fill="#333333">')
  for _, v in ipairs(xticks) do
    add(string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>' ..
                      '<text class="xtick" x="%s" y="%s" text-anchor="middle" data-value="%.17g">%s</text>',
                      num(px(v)), num(top + ph), num(px(v)), num(top + ph + 5),
                      num(px(v)), num(top + ph + 19), v, xml(tick_label(v, xstep))))
  end
  add('</g>')
  add('<g class="yticks" fill="#333333">')
  for i, v in ipairs(yticks) do
    add(string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>' ..
                      '<text class="ytick" x="%s" y="%s" text-anchor="end" data-value="%.17g">%s</text>',
                      num(left - 5), num(py(v)), num(left), num(py(v)),
                      num(left - 8), num(py(v) + 4), v, xml(ylabels[i])))
  end
  add('</g>')
  if opts.xlabel then
    add(string.format('<text class="xlabel" x="%s" y="%s" text-anchor="middle">%s</text>',
                      num(left + pw / 2), num(H - 12), xml(opts.xlabel)))
  end
  if opts.ylabel then
    add(string.format('<text class="ylabel" x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>',
                      num(top + ph / 2), num(top + ph / 2), xml(opts.ylabel)))
  end
  -- the curves: one polyline per run of finite points
  local paths = {}
  for k, s in ipairs(list) do
    local color = PALETTE[(k - 1) % #PALETTE + 1]
    add(string.format('<g class="series" data-name="%s" stroke="%s" fill="none" stroke-width="1.8" ' ..
                      'stroke-linejoin="round">', xml(s.name), color))
    local run_pts, all_pts = {}, {}
    local function flush()
      if #run_pts > 0 then
        local text = {}
        for i, p in ipairs(run_pts) do text[i] = num(p[1]) .. "," .. num(p[2]) end
        add(string.format('<polyline points="%s"/>', table.concat(text, " ")))
        paths[#paths + 1] = run_pts
      end
      run_pts = {}
    end
    for i = 1, #s.y do
      local x, y = s.x[i], s.y[i]
      if is_finite(x) and is_finite(y) then
        local p = { px(x), py(y) }
        run_pts[#run_pts + 1] = p
        all_pts[#all_pts + 1] = p
      else
        flush()
      end
    end
    flush()
    local markers = opts.markers
    if markers == nil then markers = #s.y <= 50 end
    if markers then
      for _, p in ipairs(all_pts) do
        add(string.format('<circle cx="%s" cy="%s" r="2.5" fill="%s" stroke="none"/>', num(p[1]), num(p[2]), color))
      end
    end
    add('</g>')
  end
  -- the legend, in the emptiest corner of the plot area
  local longest = 0
  for _, s in ipairs(list) do longest = math.max(longest, #s.name) end
  local lw, lh = 40 + longest * CHAR_W, 8 + 18 * #list
  local m = 8
  local corners = {
    { x = left + pw - lw - m, y = top + m }, { x = left + m, y = top + m },
    { x = left + pw - lw - m, y = top + ph - lh - m }, { x = left + m, y = top + ph - lh - m },
  }
  for _, c in ipairs(corners) do c.w, c.h = lw, lh end
  local box = legend_corner(corners, paths)
  add(string.format('<g class="legend"><rect x="%s" y="%s" width="%s" height="%s" fill="white" fill-opacity="0.9" ' ..
                    'stroke="#bbbbbb"/>', num(box.x), num(box.y), num(lw), num(lh)))
  for k, s in ipairs(list) do
    local color = PALETTE[(k - 1) % #PALETTE + 1]
    local y = box.y + 4 + 18 * (k - 1) + 9
    add(string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5"/>' ..
                      '<text x="%s" y="%s">%s</text>', num(box.x + 8), num(y), num(box.x + 30), num(y), color,
                      num(box.x + 36), num(y + 4), xml(s.name)))
  end
  add('</g>')
  add('</svg>')
  return table.concat(out, "\n") .. "\n"
end

-- -------------------------------------------------------------------------
-- Programs
-- -------------------------------------------------------------------------

--- Draws a program with Graphviz: a file ending in .dot (the Graphviz
-- text of Program:to_dot(), no tool needed), .svg or .png (laid out by
-- dot, from Debian's graphviz).
-- @tparam Program program
-- @tparam string file ending in .dot, .svg or .png
-- @treturn string the file name
-- @raise on a bad extension, or when dot is missing or fails
-- @usage oar.plot.program(oar.default_main_program(), "net.svg")
function M.program(program, file)
  local who = "oar.plot.program"
  if getmetatable(program) ~= framework.Program then
    error(who .. ": expects a Program first, got " .. framework.describe(program), 2)
  end
  if type(file) ~= "string" or file == "" then
    error(who .. ": expects a file name ending in .svg, .png or .dot, got " .. tostring(file), 2)
  end
  local ext = extension(file)
  if ext ~= "svg" and ext ~= "png" and ext ~= "dot" then
    error(string.format("%s: the file must end in .svg, .png or .dot, got '%s'", who, file), 2)
  end
  local dot_text = program:to_dot()
  local ok, err = pcall(function()
    if ext == "dot" then return write_file(file, dot_text, who) end
    local cmd = M.commands.dot
    if not have_command(cmd) then
      error(string.format("%s: drawing %s needs Graphviz's dot, which is not installed: " ..
                          "apt-get install graphviz (or write a .dot file)", who, file), 0)
    end
    local tmp = os.tmpname()
    write_file(tmp, dot_text, who)
    local rok, out = run(string.format("%s -T%s -o %s %s", sh_quote(cmd), ext, sh_quote(file), sh_quote(tmp)))
    os.remove(tmp)
    if not rok then error(string.format("%s: dot could not write %s: %s", who, file, out), 0) end
  end)
  if not ok then error(err, 2) end
  return file
end

return M
