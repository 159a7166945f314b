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

local B = require("spec.helpers.beam_ref")
local KINF, log_softmax = B.KINF, B.log_softmax

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
    entries[n] = { step = step, h0 = h0 }
  end

  local h0s = {}
  for n, e in ipairs(entries) do h0s[n] = e.h0 end
  local ids, parents, _, logp = B.search(h0s, function(n, id, h) return entries[n].step(id, h) end, K, #Wo[1],
    BOS, EOS, o.max_length)
  return B.backtrace_bt(ids, parents), logp
end
