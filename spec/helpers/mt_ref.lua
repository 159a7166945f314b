-- spec/helpers/mt_ref.lua — examples/book/machine_translation.lua's model
-- in plain Lua, from the trained parameters in a scope: the two encoder
-- GRUs over each source up to its length, the attention decoder cell, the
-- output layer, and Fluid's BeamSearchDecoder search (beam 0 alive at
-- first, finished beams extend with eos at no cost, the loop stops when
-- every beam of every entry is finished or after max_length + 1 steps),
-- backtracked as gather_tree does.
--
--   local ids, logp = require("spec.helpers.mt_ref")(scope, r.parts, o, src, lens, bos, eos)
--   -- ids[n][t][k], logp[n][k]
local R = require("spec.helpers.rnn_ref")
local gru_step, vecmat, cat = R.gru_step, R.vecmat, R.cat

local KINF = 1e9

local function log_softmax(v)
  local m = -math.huge
  for _, x in ipairs(v) do if x > m then m = x end end
  local z = 0
  for _, x in ipairs(v) do z = z + math.exp(x - m) end
  local out = {}
  for i, x in ipairs(v) do out[i] = x - m - math.log(z) end
  return out
end

local function zeros(n)
  local z = {}
  for i = 1, n do z[i] = 0 end
  return z
end

return function(scope, parts, o, src, lens, BOS, EOS)
  local function P(name) return scope:find_var(name):get_tensor():totable() end
  local function gru(cell)
    return { Wg = P(cell.gate_weight.name), bg = P(cell.gate_bias.name), Wc = P(cell.candidate_weight.name),
             bc = P(cell.candidate_bias.name) }
  end
  local pf, pb, pd = gru(parts.enc.fwd), gru(parts.enc.bwd), gru(parts.dec)
  local src_emb, trg_emb = P("src_emb_table"), P("trg_emb_table")
  local Wp, Wi, bi = P("enc_proj_w"), P("dec_init_w"), P("dec_init_b")
  local Ws, Wv, Wo, bo = P("attn_state_w"), P("attn_score_w"), P("output_w"), P("output_b")
  local H, S, K = o.hidden_dim, o.src_len, o.beam_size

  -- the encoder of each entry and its decoder step function
  local entries = {}
  for n = 1, #src do
    local len = lens[n]
    local fo, bo_, enc, proj, mask = {}, {}, {}, {}, {}
    local h = zeros(H)
    for t = 1, S do fo[t], bo_[t] = zeros(H), zeros(H) end
    for t = 1, len do
      h = gru_step(src_emb[src[n][t] + 1], h, pf)
      fo[t] = h
    end
    local hf = h
    h = zeros(H)
    for t = len, 1, -1 do
      h = gru_step(src_emb[src[n][t] + 1], h, pb)
      bo_[t] = h
    end
    local hb = h
    for t = 1, S do
      enc[t] = cat(fo[t], bo_[t])
      proj[t] = vecmat(enc[t], Wp)
      mask[t] = t <= len and 0 or -KINF
    end
    local h0 = vecmat(cat(hf, hb), Wi, bi)
    for i = 1, H do h0[i] = math.tanh(h0[i]) end
    local function step(id, hs)
      local sp = vecmat(hs, Ws)
      local scores, m = {}, -math.huge
      for t = 1, S do
        local mixed = {}
        for i = 1, H do mixed[i] = math.tanh(proj[t][i] + sp[i]) end
        scores[t] = vecmat(mixed, Wv)[1] + mask[t]
        if scores[t] > m then m = scores[t] end
      end
      local z = 0
      for t = 1, S do scores[t] = math.exp(scores[t] - m); z = z + scores[t] end
      local ctx = zeros(2 * H)
      for t = 1, S do
        for i = 1, 2 * H do ctx[i] = ctx[i] + scores[t] / z * enc[t][i] end
      end
      local nh = gru_step(cat(trg_emb[id + 1], ctx), hs, pd)
      return log_softmax(vecmat(nh, Wo, bo)), nh
    end
    local beams = {}
    for k = 1, K do beams[k] = { h = h0, logp = k == 1 and 0 or -KINF, fin = false, id = BOS } end
    entries[n] = { step = step, beams = beams }
  end

  local V = #Wo[1]
  local ids, parents = {}, {}
  local t = 0
  repeat
    t = t + 1
    ids[t], parents[t] = {}, {}
    local all_fin = true
    for n, e in ipairs(entries) do
      local cand, hs = {}, {}
      for k, bm in ipairs(e.beams) do
        local lp
        lp, hs[k] = e.step(bm.id, bm.h)
        for v = 1, V do
          local s = lp[v]
          if bm.fin then s = (v - 1 == EOS) and 0 or -KINF end
          cand[#cand + 1] = { idx = (k - 1) * V + v - 1, score = s + bm.logp }
        end
      end
      table.sort(cand, function(x, y)
        if x.score ~= y.score then return x.score > y.score end
        return x.idx < y.idx
      end)
      local nb = {}
      ids[t][n], parents[t][n] = {}, {}
      for j = 1, K do
        local c = cand[j]
        local beam, tok = math.floor(c.idx / V), c.idx % V
        local parent = e.beams[beam + 1]
        nb[j] = { h = hs[beam + 1], logp = c.score, fin = parent.fin or tok == EOS, id = tok }
        ids[t][n][j], parents[t][n][j] = tok, beam
        all_fin = all_fin and nb[j].fin
      end
      e.beams = nb
    end
  until all_fin or t > o.max_length

  local out, logp = {}, {}
  for n, e in ipairs(entries) do
    out[n], logp[n] = {}, {}
    for s = 1, t do out[n][s] = {} end
    for k = 1, K do
      out[n][t][k] = ids[t][n][k]
      local p = parents[t][n][k]
      for s = t - 1, 1, -1 do
        out[n][s][k] = ids[s][n][p + 1]
        p = parents[s][n][p + 1]
      end
      logp[n][k] = e.beams[k].logp
    end
  end
  return out, logp
end
