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


-- ---- Accuracy, Auc, Precision, Recall, CompositeMetric (fluid.metrics) ------------

-- a Tensor or nested table as a plain table (numbers pass through)
local function plain(v)
  if type(v) == "table" and type(v.totable) == "function" then return v:totable() end
  return v
end

-- each row's last value: a list of rows ([N, 2] -> column 2, [N, 1]) or of numbers ([N])
local function last_of_rows(v, who, what)
  v = plain(v)
  if type(v) ~= "table" then error(string.format("%s: %s must be a Tensor or a table, got %s", who, what, type(v)), 3) end
  local out = {}
  for i, row in ipairs(v) do
    if type(row) == "table" then row = row[#row] end
    if type(row) ~= "number" then
      error(string.format("%s: %s[%d] must be a number or a row of numbers", who, what, i), 3)
    end
    out[i] = row
  end
  return out
end

-- preds (their last column) and labels as two lists of one length
local function pairs_of(preds, labels, who)
  local p = last_of_rows(preds, who, "preds")
  local l = flat_numbers(plain(labels), who)
  if #p ~= #l then
    error(string.format("%s: %d predictions but %d labels", who, #p, #l), 3)
  end
  return p, l
end

-- a class whose instances are made by Class(...) or Class.new(...)
local function class()
  local C = {}
  C.__index = C
  return setmetatable(C, { __call = function(C_, ...) return C_.new(...) end })
end

local function want_self(self, C, who)
  if getmetatable(self) ~= C then error("oar.metrics." .. who .. ": call it with ':'", 3) end
end

local Accuracy = class()
M.Accuracy = Accuracy

--- The weighted mean of batch accuracies (Fluid's metrics.Accuracy).
-- @tparam[opt] string name
-- @treturn Accuracy with update, eval, reset
-- @usage local acc = oar.metrics.Accuracy("acc")
-- acc:update(0.75, 32)   -- a batch's accuracy and its size
-- print(acc:eval())
function Accuracy.new(name)
  local self = { name = name }
  return setmetatable(self, Accuracy):reset()
end

--- Forgets what was accumulated.
-- @treturn Accuracy self
-- @usage acc:reset()
function Accuracy:reset()
  self.value, self.weight = 0, 0
  return self
end

--- Adds a batch's accuracy with its weight (usually its size).
-- @param value the accuracy (a number or a one-element tensor)
-- @param weight its weight, >= 0
-- @treturn Accuracy self
-- @usage acc:update(0.75, 32)
function Accuracy:update(value, weight)
  want_self(self, Accuracy, "Accuracy:update")
  local v, w = count_of(value, "value"), count_of(weight, "weight")
  if w < 0 then error("oar.metrics.Accuracy:update: weight must be >= 0, got " .. w, 2) end
  self.value = self.value + v * w
  self.weight = self.weight + w
  return self
end

--- The weighted mean so far.
-- @treturn number
-- @raise when the weights sum to 0
-- @usage local a = acc:eval()
function Accuracy:eval()
  if self.weight == 0 then
    error("oar.metrics.Accuracy:eval: no weight accumulated; call update(value, weight) first", 2)
  end
  return self.value / self.weight
end

local Auc = class()
M.Auc = Auc

--- The area under the ROC curve of every prediction so far, from bucketed
-- counts kept in Lua (Fluid's metrics.Auc): a prediction p of a row falls
-- in bucket floor(p * num_thresholds).
-- @tparam[opt] string name
-- @tparam[opt="ROC"] string curve "ROC" or "PR" (both give the ROC area, as Fluid's)
-- @tparam[opt=4095] int num_thresholds the buckets less one
-- @treturn Auc with update, eval, reset
-- @usage local auc = oar.metrics.Auc("auc")
-- auc:update(probs, labels)   -- probs [N, 2] (column 2 positive) and labels [N, 1], fetched
-- print(auc:eval())
function Auc.new(name, curve, num_thresholds)
  curve = curve or "ROC"
  if curve ~= "ROC" and curve ~= "PR" then
    error('oar.metrics.Auc: curve must be "ROC" or "PR", got ' .. tostring(curve), 2)
  end
  num_thresholds = num_thresholds or 4095
  if type(num_thresholds) ~= "number" or num_thresholds % 1 ~= 0 or num_thresholds < 1 then
    error("oar.metrics.Auc: num_thresholds must be a positive integer, got " .. tostring(num_thresholds), 2)
  end
  local self = { name = name, curve = curve, num_thresholds = num_thresholds }
  return setmetatable(self, Auc):reset()
end

--- Zeroes the buckets.
-- @treturn Auc self
-- @usage auc:reset()
function Auc:reset()
  self.stat_pos, self.stat_neg = {}, {}
  for i = 0, self.num_thresholds do self.stat_pos[i], self.stat_neg[i] = 0, 0 end
  return self
end

--- Adds a batch: predictions ([N, 2] with the positive probability last,
-- [N, 1] or [N]) and labels (nonzero positive).
-- @param preds a Tensor or a table
-- @param labels a Tensor or a table
-- @treturn Auc self
-- @usage auc:update({{0.3, 0.7}, {0.9, 0.1}}, {1, 0})
function Auc:update(preds, labels)
  want_self(self, Auc, "Auc:update")
  local p, l = pairs_of(preds, labels, "oar.metrics.Auc:update")
  for i = 1, #p do
    if not (p[i] >= 0 and p[i] <= 1) then
      error(string.format("oar.metrics.Auc:update: preds row %d is %s; probabilities must be in [0, 1]", i,
                          tostring(p[i])), 2)
    end
    local b = math.floor(p[i] * self.num_thresholds)
    local stat = l[i] ~= 0 and self.stat_pos or self.stat_neg
    stat[b] = stat[b] + 1
  end
  return self
end

--- The area: trapezoids over the buckets from the top down, divided by
-- positives x negatives (0 while either is 0).
-- @treturn number
-- @usage local area = auc:eval()
function Auc:eval()
  local tp, tn, area = 0, 0, 0
  for i = self.num_thresholds, 0, -1 do
    local pp, pn = tp, tn
    tp, tn = tp + self.stat_pos[i], tn + self.stat_neg[i]
    area = area + math.abs(tn - pn) * (tp + pp) / 2
  end
  if tp > 0 and tn > 0 then return area / tp / tn end
  return 0
end

-- binary predictions rounded to the nearest integer, as Fluid's np.rint
local function rint(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end

local Precision = class()
M.Precision = Precision

--- Precision of a binary classifier: true positives / predicted positives
-- (Fluid's metrics.Precision; predictions are rounded).
-- @tparam[opt] string name
-- @treturn Precision with update, eval, reset
-- @usage local p = oar.metrics.Precision()
-- p:update({0.2, 0.8, 0.9}, {0, 1, 0})
-- print(p:eval())   --> 0.5
function Precision.new(name)
  local self = { name = name }
  return setmetatable(self, Precision):reset()
end

--- Forgets what was accumulated.
-- @treturn Precision self
-- @usage p:reset()
function Precision:reset()
  self.tp, self.fp = 0, 0
  return self
end

--- Adds a batch of predictions ([N, 1] or [N], rounded) and labels (0 or 1).
-- @param preds a Tensor or a table
-- @param labels a Tensor or a table
-- @treturn Precision self
-- @usage p:update({0.2, 0.8}, {0, 1})
function Precision:update(preds, labels)
  want_self(self, Precision, "Precision:update")
  local p, l = pairs_of(preds, labels, "oar.metrics.Precision:update")
  for i = 1, #p do
    if rint(p[i]) == 1 then
      if l[i] == 1 then self.tp = self.tp + 1 else self.fp = self.fp + 1 end
    end
  end
  return self
end

--- The precision so far (0 when nothing was predicted positive).
-- @treturn number
-- @usage local precision = p:eval()
function Precision:eval()
  local n = self.tp + self.fp
  return n ~= 0 and self.tp / n or 0
end

local Recall = class()
M.Recall = Recall

--- Recall of a binary classifier: true positives / labelled positives
-- (Fluid's metrics.Recall; predictions are rounded).
-- @tparam[opt] string name
-- @treturn Recall with update, eval, reset
-- @usage local r = oar.metrics.Recall()
-- r:update({0.2, 0.8, 0.9}, {1, 1, 0})
-- print(r:eval())   --> 0.5
function Recall.new(name)
  local self = { name = name }
  return setmetatable(self, Recall):reset()
end

--- Forgets what was accumulated.
-- @treturn Recall self
-- @usage r:reset()
function Recall:reset()
  self.tp, self.fn = 0, 0
  return self
end

--- Adds a batch of predictions ([N, 1] or [N], rounded) and labels (0 or 1).
-- @param preds a Tensor or a table
-- @param labels a Tensor or a table
-- @treturn Recall self
-- @usage r:update({0.2, 0.8}, {1, 1})
function Recall:update(preds, labels)
  want_self(self, Recall, "Recall:update")
  local p, l = pairs_of(preds, labels, "oar.metrics.Recall:update")
  for i = 1, #p do
    if l[i] == 1 then
      if rint(p[i]) == 1 then self.tp = self.tp + 1 else self.fn = self.fn + 1 end
    end
  end
  return self
end

--- The recall so far (0 when no label was positive).
-- @treturn number
-- @usage local recall = r:eval()
function Recall:eval()
  local n = self.tp + self.fn
  return n ~= 0 and self.tp / n or 0
end

local CompositeMetric = class()
M.CompositeMetric = CompositeMetric

--- Several metrics updated with the same predictions and labels (Fluid's
-- metrics.CompositeMetric).
-- @tparam[opt] string name
-- @treturn CompositeMetric with add_metric, update, eval, reset
-- @usage local m = oar.metrics.CompositeMetric()
-- m:add_metric(oar.metrics.Precision()); m:add_metric(oar.metrics.Recall())
-- m:update(preds, labels)
-- local precision, recall = table.unpack(m:eval())
function CompositeMetric.new(name)
  local self = { name = name, metrics = {} }
  return setmetatable(self, CompositeMetric):reset()
end

--- Resets every metric added.
-- @treturn CompositeMetric self
-- @usage m:reset()
function CompositeMetric:reset()
  for _, m in ipairs(self.metrics) do m:reset() end
  return self
end

--- Adds a metric: anything with update(preds, labels), eval() and reset().
-- @param metric the metric
-- @treturn CompositeMetric self
-- @usage m:add_metric(oar.metrics.Precision())
function CompositeMetric:add_metric(metric)
  want_self(self, CompositeMetric, "CompositeMetric:add_metric")
  if type(metric) ~= "table" or type(metric.update) ~= "function" or type(metric.eval) ~= "function"
     or type(metric.reset) ~= "function" then
    error("oar.metrics.CompositeMetric:add_metric: metric must have update, eval and reset, got " .. type(metric), 2)
  end
  self.metrics[#self.metrics + 1] = metric
  return self
end

--- Updates every metric with the batch.
-- @param preds predictions
-- @param labels labels
-- @treturn CompositeMetric self
-- @usage m:update(preds, labels)
function CompositeMetric:update(preds, labels)
  want_self(self, CompositeMetric, "CompositeMetric:update")
  for _, m in ipairs(self.metrics) do m:update(preds, labels) end
  return self
end

--- Every metric's eval(), in the order they were added.
-- @treturn table the list of results
-- @usage local results = m:eval()
function CompositeMetric:eval()
  local out = {}
  for i, m in ipairs(self.metrics) do out[i] = m:eval() end
  return out
end

return M
