--- oar.metrics: a training log written as you go, and read back for plots.
--
--   local log = oar.metrics.logger{ file = "run.csv" }     -- or "run.jsonl"
--   log:log{ epoch = 1, step = 100, loss = 0.52 }
--   log:log{ epoch = 1, step = 938, loss = 0.47, val_loss = 0.41, val_acc = 0.85 }
--   log:close()
--
--   local run = oar.metrics.read("run.csv")
--   run.names            --> {"epoch", "step", "loss", "val_acc", "val_loss"}
--   run.n                --> 2 (rows)
--   run.columns.val_loss --> {nil, 0.41} (a cell not logged in a row is nil)
--   local steps, losses = oar.metrics.series(run, "step", "val_loss")
--
-- Two formats, chosen by the file's extension (or format=):
--   .csv    a header line, then one line per log call; every column must be
--           known when the header is written: by columns={...}, else the
--           keys of the first row (a later, new key is an error that says so).
--           Numbers are written with the fewest digits (at most 17) that
--           read back exactly; nan and inf as nan, inf, -inf; a cell not logged is empty.
--   .jsonl  one JSON object per line (JSON Lines), any keys in any row;
--           written and read with dkjson (Debian's lua-dkjson). JSON has no
--           NaN or infinity: they are written as null and read back as nil.
-- Each row is flushed as it is logged, so a run that dies keeps its log, and
-- a plot can be drawn from a run still going.
-- @module oar.metrics
local argcheck = require("oar.argcheck")

local M = {}

local FIRST = { epoch = 1, step = 2 }

-- Column order for keys first seen together: epoch, step, then by name.
local function order_keys(keys)
  table.sort(keys, function(a, b)
    local fa, fb = FIRST[a] or 3, FIRST[b] or 3
    if fa ~= fb then return fa < fb end
    return a < b
  end)
  return keys
end

local function format_of(file, format, who)
  if format ~= nil then
    if format ~= "csv" and format ~= "jsonl" then
      error(string.format("%s: format must be \"csv\" or \"jsonl\", got %s", who, tostring(format)), 3)
    end
    return format
  end
  local ext = file:match("%.([%w]+)$")
  ext = ext and ext:lower()
  if ext == "csv" then return "csv" end
  if ext == "jsonl" or ext == "ndjson" then return "jsonl" end
  error(string.format("%s: cannot tell the format of '%s': name it .csv or .jsonl, or pass format=\"csv\"|\"jsonl\"",
                      who, file), 3)
end

local function dkjson(who)
  local ok, json = pcall(require, "dkjson")
  if not ok then
    error(who .. ": JSON Lines need dkjson, which is not installed: apt-get install lua-dkjson", 3)
  end
  return json
end

---------------------------------------------------------------------------
-- CSV cells
---------------------------------------------------------------------------

local function csv_number(v)
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
  for digits = 15, 16 do   -- the shortest text that reads back exactly
    local text = string.format("%." .. digits .. "g", v)
    if tonumber(text) == v then return text end
  end
  return string.format("%.17g", v)
end

local function csv_cell(v)
  if v == nil then return "" end
  if type(v) == "number" then return csv_number(v) end
  if type(v) == "boolean" then return tostring(v) end
  if v:find('[,"\r\n]') or v:match("^%s") or v:match("%s$") or v == "" then
    return '"' .. v:gsub('"', '""') .. '"'
  end
  return v
end

-- One CSV record starting at line `line` of `lines` (a quoted cell may span
-- lines); returns the cells (quoted ones marked) and the next line's index.
local function csv_record(lines, i, file)
  local cells, quoted = {}, {}
  local s = lines[i]
  local pos = 1
  while true do
    if s:sub(pos, pos) == '"' then
      local buf = {}
      pos = pos + 1
      while true do
        local q = s:find('"', pos, true)
        if not q then
          buf[#buf + 1] = s:sub(pos) .. "\n"
          i = i + 1
          if lines[i] == nil then error(string.format("oar.metrics.read: %s ends inside a quoted cell", file), 0) end
          s, pos = lines[i], 1
        elseif s:sub(q + 1, q + 1) == '"' then
          buf[#buf + 1] = s:sub(pos, q)
          pos = q + 2
        else
          buf[#buf + 1] = s:sub(pos, q - 1)
          pos = q + 1
          break
        end
      end
      cells[#cells + 1] = table.concat(buf)
      quoted[#cells] = true
    else
      local c = s:find(",", pos, true)
      cells[#cells + 1] = s:sub(pos, (c or #s + 1) - 1)
      pos = c or #s + 1
    end
    if s:sub(pos, pos) == "," then
      pos = pos + 1
    elseif pos > #s then
      return cells, quoted, i + 1
    else
      error(string.format("oar.metrics.read: %s line %d: unexpected text after a quoted cell", file, i), 0)
    end
  end
end

local SPECIAL = { nan = 0 / 0, inf = math.huge, ["+inf"] = math.huge, ["-inf"] = -math.huge }

local function csv_value(cell, quoted)
  if quoted then return cell end
  if cell == "" then return nil end
  local n = tonumber(cell)
  if n then return n end
  local lower = cell:lower()
  if SPECIAL[lower] then return SPECIAL[lower] end
  if cell == "true" then return true end
  if cell == "false" then return false end
  return cell
end

---------------------------------------------------------------------------
-- The logger
---------------------------------------------------------------------------

local Logger = {}
Logger.__index = Logger

local LOGGER_ARGS = { file = true, format = true, columns = true, append = true }

--- Opens a metrics log (see the module's description for the formats).
-- @tparam table args keyword arguments:
-- @tparam string args.file the path, ending in .csv or .jsonl
-- @tparam[opt] string args.format "csv" or "jsonl" (default: from the extension)
-- @tparam[opt] {string,...} args.columns CSV: the column names in order (default: the first
-- row's keys, epoch and step first)
-- @tparam[opt=false] bool args.append keep the file's rows and add to them (a CSV file's header
-- must then match); false: start the file afresh
-- @treturn Logger
-- @raise on a bad argument or a file that cannot be opened
-- @usage
-- local log = oar.metrics.logger{file = "run.csv"}
-- log:log{epoch = 1, step = 100, loss = 0.52}
-- log:close()
function M.logger(args)
  local who = "oar.metrics.logger"
  if type(args) ~= "table" then
    error(who .. ": expects a table of arguments {file=, columns=}, got " .. type(args), 2)
  end
  argcheck.keys(who, args, LOGGER_ARGS)
  local file = args.file
  if type(file) ~= "string" or file == "" then
    error(who .. ": file must be a path (a non-empty string), got " .. tostring(file), 2)
  end
  local format = format_of(file, args.format, who)
  local columns = args.columns
  if columns ~= nil then
    if type(columns) ~= "table" or #columns == 0 then
      error(who .. ": columns must be a non-empty list of names", 2)
    end
    local seen = {}
    for i, c in ipairs(columns) do
      if type(c) ~= "string" or c == "" then
        error(string.format("%s: columns[%d] must be a non-empty string, got %s", who, i, tostring(c)), 2)
      end
      if seen[c] then error(string.format("%s: column '%s' is named twice", who, c), 2) end
      seen[c] = true
    end
  end
  if args.append ~= nil and type(args.append) ~= "boolean" then
    error(who .. ": append must be a boolean, got " .. type(args.append), 2)
  end
  local self = setmetatable({ file = file, format = format, rows = 0 }, Logger)
  if format == "jsonl" then self.json = dkjson(who) end
  local header
  if args.append and format == "csv" then
    local f = io.open(file, "r")
    if f then
      local first = f:read("*l")
      f:close()
      if first and first ~= "" then header = csv_record({ first }, 1, file) end
    end
  end
  if header then
    if columns and table.concat(columns, "\0") ~= table.concat(header, "\0") then
      error(string.format("%s: %s already has the columns %s, not %s", who, file,
                          table.concat(header, ","), table.concat(columns, ",")), 2)
    end
    columns = header
    self.header_written = true
  end
  if columns then
    self.columns = {}
    self.known = {}
    for i, c in ipairs(columns) do self.columns[i] = c self.known[c] = true end
  end
  local f, err = io.open(file, args.append and "a" or "w")
  if not f then error(string.format("%s: cannot open %s: %s", who, file, tostring(err)), 2) end
  self.handle = f
  if format == "csv" and self.columns and not self.header_written then self:_header() end
  return self
end

function Logger:_header()
  local cells = {}
  for i, c in ipairs(self.columns) do cells[i] = csv_cell(c) end
  self.handle:write(table.concat(cells, ","), "\n")
  self.header_written = true
end

-- The close name among `names` for a did-you-mean, or nil.
local function suggestion(name, names)
  if #names == 0 then return nil end
  return argcheck.suggest(name, names)
end

--- Methods of a metrics log.
-- @type Logger

--- Writes one row and flushes it.
-- @tparam table row name = number, string or boolean
-- @treturn Logger the logger, so calls chain
-- @raise after close, on a bad value, or (CSV) on a column the header lacks
-- @usage log:log{epoch = 1, step = 938, loss = 0.47, val_loss = 0.41}
function Logger:log(row)
  if getmetatable(self) ~= Logger then error("oar.metrics: call logger:log{...} with ':'", 2) end
  if not self.handle then error("oar.metrics: log after close (" .. self.file .. ")", 2) end
  if type(row) ~= "table" then error("oar.metrics: log expects a table of name = value, got " .. type(row), 2) end
  local keys = {}
  for k, v in pairs(row) do
    if type(k) ~= "string" or k == "" then
      error("oar.metrics: log's keys must be column names (strings), got " .. tostring(k), 2)
    end
    local t = type(v)
    if t ~= "number" and t ~= "string" and t ~= "boolean" then
      error(string.format("oar.metrics: %s must be a number, a string or a boolean, got %s " ..
                          "(a Tensor? log t:item())", k, t), 2)
    end
    keys[#keys + 1] = k
  end
  if self.format == "csv" then
    if not self.columns then
      if #keys == 0 then error("oar.metrics: the first row of a CSV log names its columns; it cannot be empty", 2) end
      self.columns, self.known = order_keys(keys), {}
      for _, c in ipairs(self.columns) do self.known[c] = true end
      self:_header()
    end
    for _, k in ipairs(keys) do
      if not self.known[k] then
        local near = suggestion(k, self.columns)
        error(string.format("oar.metrics: '%s' is not a column of %s (%s)%s; a CSV log's columns are fixed " ..
                            "by its header: name them all up front with oar.metrics.logger{file=, columns={...}}",
                            k, self.file, table.concat(self.columns, ", "),
                            near and (": did you mean '" .. near .. "'?") or ""), 2)
      end
    end
    local cells = {}
    for i, c in ipairs(self.columns) do cells[i] = csv_cell(row[c]) end
    self.handle:write(table.concat(cells, ","), "\n")
  else
    local order = self.columns or {}
    local known = self.known or {}
    local new = {}
    for _, k in ipairs(keys) do if not known[k] then new[#new + 1] = k end end
    if #new > 0 then  -- remember the key order for the next rows
      self.columns = self.columns or {}
      self.known = known
      for _, k in ipairs(order_keys(new)) do self.columns[#self.columns + 1] = k known[k] = true end
      order = self.columns
    end
    self.handle:write(self.json.encode(row, { keyorder = order }), "\n")
  end
  self.handle:flush()
  self.rows = self.rows + 1
  return self
end

--- Closes the file (further log calls are errors); closing twice is harmless.
-- @usage log:close()
function Logger:close()
  if getmetatable(self) ~= Logger then error("oar.metrics: call logger:close() with ':'", 2) end
  if self.handle then
    self.handle:close()
    self.handle = nil
  end
end

M.Logger = Logger

--- Reading a log back.
-- @section reading

---------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------

local READ_ARGS = { format = true }

local function read_lines(file, who)
  local f, err = io.open(file, "r")
  if not f then error(string.format("%s: cannot open %s: %s", who, file, tostring(err)), 3) end
  local lines = {}
  for line in f:lines() do lines[#lines + 1] = (line:gsub("\r$", "")) end
  f:close()
  return lines
end

--- Reads a log written by logger (or any CSV with a header, or JSON Lines
-- of flat objects).
-- @tparam string file
-- @tparam[opt] table opts options:
-- @tparam[opt] string opts.format "csv" or "jsonl" (default: from the extension)
-- @treturn table `{names = {column names}, n = rows, columns = {name = {value per row, nil where the row has none}}}`
-- @raise when the file cannot be read or parsed
-- @usage
-- local run = oar.metrics.read("run.csv")
-- print(run.n, table.concat(run.names, ", "))
function M.read(file, opts)
  local who = "oar.metrics.read"
  if type(file) ~= "string" or file == "" then
    error(who .. ": expects a file name, got " .. tostring(file), 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error(who .. ": options must be a table {format=}, got " .. type(opts), 2)
  end
  argcheck.keys(who, opts, READ_ARGS)
  local format = format_of(file, opts and opts.format, who)
  local lines = read_lines(file, who)
  local out = { names = {}, n = 0, columns = {} }
  if format == "csv" then
    if #lines == 0 then return out end
    local header, _, i = csv_record(lines, 1, file)
    for k, name in ipairs(header) do
      if out.columns[name] then error(string.format("%s: %s names column '%s' twice", who, file, name), 2) end
      out.names[k] = name
      out.columns[name] = {}
    end
    while lines[i] do
      if lines[i] == "" and lines[i + 1] == nil then break end
      local line_no = i
      local cells, quoted
      cells, quoted, i = csv_record(lines, i, file)
      if #cells ~= #header then
        error(string.format("%s: %s line %d has %d cells, the header %d", who, file, line_no, #cells, #header), 2)
      end
      out.n = out.n + 1
      for k, name in ipairs(header) do out.columns[name][out.n] = csv_value(cells[k], quoted[k]) end
    end
  else
    local json = dkjson(who)
    local rows, seen = {}, {}
    for i, line in ipairs(lines) do
      if line:match("%S") then
        local obj, _, err = json.decode(line, 1, nil)
        if type(obj) ~= "table" then
          error(string.format("%s: %s line %d is not a JSON object%s", who, file, i,
                              err and (": " .. tostring(err)) or ""), 2)
        end
        rows[#rows + 1] = obj
        local new = {}
        for k in pairs(obj) do
          if not seen[k] then seen[k] = true new[#new + 1] = k end
        end
        for _, k in ipairs(order_keys(new)) do
          out.names[#out.names + 1] = k
          out.columns[k] = {}
        end
      end
    end
    out.n = #rows
    for r, obj in ipairs(rows) do
      for k, v in pairs(obj) do
        if type(v) == "table" then
          error(string.format("%s: %s row %d: '%s' is not a number, string or boolean", who, file, r, k), 2)
        end
        out.columns[k][r] = v
      end
    end
  end
  return out
end

--- The rows of `data` (read's result) where both columns hold numbers, as
-- two arrays.
-- @tparam table data what oar.metrics.read returns
-- @tparam ?string x the x column; nil: the row numbers
-- @tparam string y the y column
-- @treturn {number,...} xs
-- @treturn {number,...} ys
-- @raise on a missing column (with a did-you-mean)
-- @usage local steps, losses = oar.metrics.series(oar.metrics.read("run.csv"), "step", "val_loss")
function M.series(data, x, y)
  local who = "oar.metrics.series"
  if type(data) ~= "table" or type(data.columns) ~= "table" or type(data.n) ~= "number" then
    error(who .. ": expects the table oar.metrics.read returns", 2)
  end
  local function column(name)
    local c = data.columns[name]
    if c == nil then
      local near = suggestion(name, data.names or {})
      error(string.format("%s: no column '%s' (columns: %s)%s", who, tostring(name),
                          table.concat(data.names or {}, ", "),
                          near and ("; did you mean '" .. near .. "'?") or ""), 3)
    end
    return c
  end
  local xc = x ~= nil and column(x) or nil
  local yc = column(y)
  local xs, ys = {}, {}
  for r = 1, data.n do
    local xv, yv = xc and xc[r] or r, yc[r]
    if type(xv) == "number" and type(yv) == "number" then
      xs[#xs + 1], ys[#ys + 1] = xv, yv
    end
  end
  return xs, ys
end


--- Chunk evaluation across batches.
-- @section chunk

local ChunkEvaluator = {}
ChunkEvaluator.__index = ChunkEvaluator

-- a count from a number or a one-element tensor (what chunk_eval's outputs fetch as)
local function count_of(v, what)
  if type(v) == "number" then return v end
  if type(v) == "table" and type(v.item) == "function" then return tonumber(v:item()) end
  if type(v) == "cdata" then return tonumber(v) end
  error(string.format("oar.metrics.ChunkEvaluator:update: %s must be a number or a one-element tensor, got %s",
                      what, type(v)), 3)
end

--- Accumulates chunk counts over batches and gives precision, recall and F1
-- from the totals (Fluid's fluid.metrics.ChunkEvaluator).
-- @tparam[opt] string name
-- @treturn ChunkEvaluator
-- Also `oar.metrics.ChunkEvaluator(name)`.
-- @usage local ev = oar.metrics.ChunkEvaluator.new()
-- ev:update(ni, nl, nc)   -- layers.chunk_eval's last three outputs, fetched
-- local precision, recall, f1 = ev:eval()
function ChunkEvaluator.new(name)
  local self = setmetatable({ name = name }, ChunkEvaluator)
  return self:reset()
end
setmetatable(ChunkEvaluator, { __call = function(_, name) return ChunkEvaluator.new(name) end })

--- Sets the counts back to 0.
-- @treturn ChunkEvaluator self
-- @usage ev:reset()
function ChunkEvaluator:reset()
  self.num_infer_chunks, self.num_label_chunks, self.num_correct_chunks = 0, 0, 0
  return self
end

--- Adds one batch's counts (numbers, or chunk_eval's fetched int64 [1] tensors).
-- @param num_infer_chunks chunks inferred
-- @param num_label_chunks chunks in the labels
-- @param num_correct_chunks chunks inferred correctly
-- @treturn ChunkEvaluator self
-- @usage ev:update(12, 10, 8)
function ChunkEvaluator:update(num_infer_chunks, num_label_chunks, num_correct_chunks)
  if getmetatable(self) ~= ChunkEvaluator then error("oar.metrics: call evaluator:update(...) with ':'", 2) end
  self.num_infer_chunks = self.num_infer_chunks + count_of(num_infer_chunks, "num_infer_chunks")
  self.num_label_chunks = self.num_label_chunks + count_of(num_label_chunks, "num_label_chunks")
  self.num_correct_chunks = self.num_correct_chunks + count_of(num_correct_chunks, "num_correct_chunks")
  return self
end

--- Precision, recall and F1 of the counts so far (each 0 when its
-- denominator, or for F1 the correct count, is 0).
-- @treturn number precision
-- @treturn number recall
-- @treturn number f1
-- @usage local p, r, f1 = ev:eval()
function ChunkEvaluator:eval()
  local p = self.num_infer_chunks ~= 0 and self.num_correct_chunks / self.num_infer_chunks or 0
  local r = self.num_label_chunks ~= 0 and self.num_correct_chunks / self.num_label_chunks or 0
  local f1 = self.num_correct_chunks ~= 0 and 2 * p * r / (p + r) or 0
  return p, r, f1
end

M.ChunkEvaluator = ChunkEvaluator
-- ---- EditDistance (fluid.metrics.EditDistance) ------------------------------------

local EditDistance = {}
EditDistance.__index = EditDistance

-- the values of a Tensor, a nested table or a number, flattened
local function flat_numbers(v, who, out)
  out = out or {}
  if type(v) == "number" then out[#out + 1] = v; return out end
  if type(v) == "table" and type(v.totable) == "function" then v = v:totable() end
  if type(v) == "number" then out[#out + 1] = v; return out end
  if type(v) ~= "table" then error(who .. ": distances must be a Tensor or a table of numbers, got " .. type(v), 3) end
  for _, x in ipairs(v) do flat_numbers(x, who, out) end
  return out
end

--- Accumulates edit distances over batches, as Fluid's metrics.EditDistance:
-- the average distance and the share of sequences with a nonzero distance.
-- @tparam[opt] string name
-- @treturn EditDistance with update, eval, reset
-- @usage local m = oar.metrics.EditDistance("ed")
-- m:update(distances, seq_num)   -- the two outputs of layers.edit_distance, fetched
-- local avg_distance, avg_instance_error = m:eval()
function M.EditDistance(name)
  if name ~= nil and type(name) ~= "string" then
    error("metrics.EditDistance: name must be a string, got " .. type(name), 2)
  end
  local self = setmetatable({ name = name }, EditDistance)
  self:reset()
  return self
end

--- Forgets what was accumulated.
function EditDistance:reset()
  self.total_distance, self.seq_num, self.instance_error = 0, 0, 0
end

--- Adds a batch: its distances (a Tensor or table, one per sequence) and
-- its sequence count (a number, or the fetched SequenceNum).
-- @param distances the distances
-- @param seq_num the number of sequences
function EditDistance:update(distances, seq_num)
  local d = flat_numbers(distances, "EditDistance:update")
  local n = seq_num
  if type(n) ~= "number" then
    local f = type(n) == "table" and flat_numbers(n, "EditDistance:update") or {}
    if #f ~= 1 then error("EditDistance:update: seq_num must be a number", 2) end
    n = f[1]
  end
  local right, total = 0, 0
  for _, v in ipairs(d) do
    if v == 0 then right = right + 1 end
    total = total + v
  end
  self.seq_num = self.seq_num + n
  self.instance_error = self.instance_error + n - right
  self.total_distance = self.total_distance + total
end

--- The average distance and the average instance error so far.
-- @treturn number the total distance / the sequences
-- @treturn number the sequences with a nonzero distance / the sequences
-- @raise when nothing was added
function EditDistance:eval()
  if self.seq_num == 0 then
    error("EditDistance:eval: there is no data; add layers.edit_distance's outputs with update first", 2)
  end
  return self.total_distance / self.seq_num, self.instance_error / self.seq_num
end

return M
