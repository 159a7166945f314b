-- spec/helpers/beam_ref.lua — Fluid's BeamSearchDecoder search in plain
-- Lua, shared by spec/rnn_decode_spec.lua and spec/helpers/mt_ref.lua, and
-- gather_tree's backtracking (spec/rnn_api_spec.lua).
--
--   local B = require("spec.helpers.beam_ref")
--   local ids, parents, scores, logp, lens = B.search(h0s, step, K, V, start, stop, max_step)
local M = {}

local KINF = 1e9
M.KINF = KINF

function M.log_softmax(v)
  local m = -math.huge
  for _, x in ipairs(v) do if x > m then m = x end end
  local z = 0
  for _, x in ipairs(v) do z = z + math.exp(x - m) end
  local out = {}
  for i, x in ipairs(v) do out[i] = x - m - math.log(z) end
  return out
end

-- h0s[b] the initial state of entry b; step(b, id, h) returns the log
-- probabilities over the V tokens and the next state. Beam 0 alive at
-- first, finished beams extend with `stop` at no cost, the loop ends when
-- every beam of every entry is finished or after max_step + 1 steps.
-- Returns per step ids[t][b][k], parents[t][b][k], scores[t][b][k]; the
-- final log_probs[b][k] and lengths[b][k].
function M.search(h0s, step, K, V, start, stop, max_step)
  local beams = {}
  for b = 1, #h0s do
    beams[b] = {}
    for k = 1, K do beams[b][k] = { h = h0s[b], logp = k == 1 and 0 or -KINF, fin = false, len = 0, id = start } end
  end
  local ids, parents, scores = {}, {}, {}
  local t = 0
  repeat
    t = t + 1
    ids[t], parents[t], scores[t] = {}, {}, {}
    local all_fin = true
    for b = 1, #h0s do
      local cand, hs = {}, {}
      for k, bm in ipairs(beams[b]) do
        local lp
        lp, hs[k] = step(b, bm.id, bm.h)
        for v = 1, V do
          local s = lp[v]
          if bm.fin then s = (v - 1 == stop) and 0 or -KINF end
          cand[#cand + 1] = { idx = (k - 1) * V + (v - 1), score = s + bm.logp }
        end
      end
      table.sort(cand, function(x, y)
        if x.score ~= y.score then return x.score > y.score end
        return x.idx < y.idx
      end)
      local nb = {}
      ids[t][b], parents[t][b], scores[t][b] = {}, {}, {}
      for j = 1, K do
        local c = cand[j]
        local beam, tok = math.floor(c.idx / V), c.idx % V
        local parent = beams[b][beam + 1]
        nb[j] = { h = hs[beam + 1], logp = c.score, fin = parent.fin or tok == stop,
                  len = parent.len + (parent.fin and 0 or 1), id = tok }
        ids[t][b][j], parents[t][b][j], scores[t][b][j] = tok, beam, c.score
        all_fin = all_fin and nb[j].fin
      end
      beams[b] = nb
    end
  until all_fin or t > max_step
  local logp, lens = {}, {}
  for b = 1, #h0s do
    logp[b], lens[b] = {}, {}
    for k = 1, K do logp[b][k], lens[b][k] = beams[b][k].logp, beams[b][k].len end
  end
  return ids, parents, scores, logp, lens
end

-- gather_tree: ids and parents [t][b][k] -> the backtracked ids, [t][b][k]
function M.backtrace(ids, parents)
  local Tm, B, K = #ids, #ids[1], #ids[1][1]
  local out = {}
  for t = 1, Tm do
    out[t] = {}
    for b = 1, B do out[t][b] = {} end
  end
  for b = 1, B do
    for k = 1, K do
      out[Tm][b][k] = ids[Tm][b][k]
      local p = parents[Tm][b][k]
      for t = Tm - 1, 1, -1 do
        out[t][b][k] = ids[t][b][p + 1]
        p = parents[t][b][p + 1]
      end
    end
  end
  return out
end

-- the same, laid out [b][t][k]
function M.backtrace_bt(ids, parents)
  local bt = M.backtrace(ids, parents)
  local out = {}
  for b = 1, #ids[1] do
    out[b] = {}
    for t = 1, #ids do out[b][t] = bt[t][b] end
  end
  return out
end

return M
