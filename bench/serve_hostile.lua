-- bench/serve_hostile.lua: the wrk script of bench/serve_hostile.sh. Each
-- request is a good v2 infer (the body in args[1]) or, with probability
-- args[2] (default 0.3), one of a set of bad ones: broken JSON, wrong
-- shapes, dtypes and sizes, the binary extension with lying lengths, deep
-- nesting, garbage bytes, a body past --max-body, wrong methods and paths.
-- done() prints the status codes seen, per code, as "status NNN: COUNT".
local threads = {}
function setup(thread) threads[#threads + 1] = thread end

local good, bad_fraction, bad
function init(args)
  local f = assert(io.open(args[1], "rb"))
  good = f:read("*a")
  f:close()
  bad_fraction = tonumber(args[2] or "0.3")
  counts = {}
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
  local json = { ["Content-Type"] = "application/json" }
  local head = '{"inputs":[{"name":"x","shape":[1,784],"datatype":"FP32","parameters":{"binary_data_size":3136}}]}'
  local raw = string.rep("\0\0\128\63", 784)
  local function bin(body, hl)
    return { "POST", "/v2/models/mlp/infer", { ["Inference-Header-Content-Length"] = tostring(hl) }, body }
  end
  local garbage = {}
  for i = 1, 512 do garbage[i] = string.char(math.random(0, 255)) end
  bad = {
    { "POST", "/v2/models/mlp/infer", json, good:sub(1, math.floor(#good / 2)) },
    { "POST", "/v2/models/mlp/infer", json, good:gsub('"shape":%[1,784%]', '"shape":[1,783]') },
    { "POST", "/v2/models/mlp/infer", json, good:gsub('"FP32"', '"INT64"') },
    { "POST", "/v2/models/mlp/infer", json, good:gsub('"shape":%[1,784%]', '"shape":[1000000000000000000,784]') },
    { "POST", "/v2/models/mlp/infer", json, good:gsub('"shape":%[1,784%]', '"shape":[-1,784]') },
    { "POST", "/v2/models/mlp/infer", json, good:gsub('"name":"x"', '"name":"y"') },
    { "POST", "/v2/models/mlp/infer", json, string.rep("[", 100000) },
    { "POST", "/v2/models/mlp/infer", json, table.concat(garbage) },
    { "POST", "/v2/models/mlp/infer", json, '{"inputs":[{"name":"x","shape":[1,784],"datatype":"FP32","data":"' ..
      string.rep("A", 4000) .. '"}]}' },
    { "POST", "/v2/models/mlp/infer", json, '{"inputs":7,"parameters":{"timeout_ms":-1}}' },
    bin(head .. raw, #head + 10),
    bin(head .. raw:sub(1, 3000), #head),
    bin(head .. raw .. "extra", #head),
    bin(head .. raw, "12abc"),
    { "GET", "/v2/models/mlp/infer", nil, nil },
    { "POST", "/v2/models/nope/infer", json, good },
    { "DELETE", "/v2/models/mlp", nil, nil },
    { "GET", "/v2/" .. string.rep("x/", 2000), nil, nil },
  }
  big = { "POST", "/v2/models/mlp/infer", json, string.rep(" ", 2 * 1024 * 1024) }
end

function request()
  if math.random() >= bad_fraction then
    return wrk.format("POST", "/v2/models/mlp/infer", { ["Content-Type"] = "application/json" }, good)
  end
  local r = math.random() < 0.01 and big or bad[math.random(#bad)]
  return wrk.format(r[1], r[2], r[3], r[4])
end

function response(status)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary)
  local total = {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("counts") or {}) do total[status] = (total[status] or 0) + n end
  end
  local keys = {}
  for k in pairs(total) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do io.write(string.format("status %d: %d\n", k, total[k])) end
  io.write(string.format("socket errors: connect %d, read %d, write %d, timeout %d\n", summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.timeout))
end
