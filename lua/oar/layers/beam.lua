--- oar.layers.beam: beam search as Fluid 1.8 writes it inside a While loop
-- over tensor arrays (its book's machine_translation decoder):
-- `beam_search` keeps the beam_size best (prefix, candidate) pairs of each
-- source sentence at one step, `beam_search_decode` backtracks the steps'
-- selected ids and scores into whole hypotheses. Neither has a gradient.
--
--   local topk_scores, topk_ids = layers.topk(probs, beam_size)
--   local accu = layers.elementwise_add{x = layers.log(topk_scores),
--                                       y = layers.reshape(pre_scores, {-1}), axis = 0}
--   local sel_ids, sel_scores = layers.beam_search{pre_ids = pre_ids, pre_scores = pre_scores,
--     ids = topk_ids, scores = accu, beam_size = beam_size, end_id = end_id}
--   ...
--   local sent_ids, sent_scores = layers.beam_search_decode{ids = ids_array,
--     scores = scores_array, beam_size = beam_size, end_id = end_id}
-- @module oar.layers.beam
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local is_variable = framework.is_variable

local M = {}

-- a Variable of one of the dtypes (Fluid's check_variable_and_dtype)
local function typed(layer, key, v, dtypes)
  check.variable(layer, key, v)
  for _, d in ipairs(dtypes) do
    if v.dtype == d then return v end
  end
  framework.raise(string.format("%s: '%s' ('%s') must be %s, got dtype %s", layer, key, v.name,
    table.concat(dtypes, " or "), tostring(v.dtype)))
end

local function array(layer, key, v, dtypes)
  if not is_variable(v) or v.type ~= "lod_tensor_array" then
    check.fail(layer, key, "a tensor array (made by create_array)", v)
  end
  return typed(layer, key, v, dtypes)
end

local FLOATS = { "float32", "float64" }

--- One step of beam search: for each source sentence, the beam_size best
-- (prefix, candidate) pairs over all its prefixes. A finished prefix
-- (pre_id == end_id) competes once more, as end_id with its score; a source
-- whose every kept pair is such a carried end_id is pruned (it keeps no
-- pairs). Also positional, as Fluid:
-- `beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, level, is_accumulated, name, return_parent_idx)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.pre_ids int64, one per prefix: the previous step's selected ids
-- (LoD level 2)
-- @tparam Variable a.pre_scores float32/float64, one per prefix: the previous
-- step's selected scores
-- @tparam[opt] Variable a.ids int64 [prefixes, K]: the candidates' ids (nil: a
-- candidate's id is its column in scores)
-- @tparam Variable a.scores float32/float64 [prefixes, K] with a LoD of level 2:
-- the candidates' scores (accumulated, or step scores when is_accumulated is false)
-- @tparam int a.beam_size the hypotheses kept per source sentence (>= 1)
-- @tparam int a.end_id the id that ends a sentence
-- @tparam[opt=0] int a.level the LoD level of scores whose sequences are the sources
-- @tparam[opt=true] bool a.is_accumulated false: a candidate's score is
-- pre_score + log(score)
-- @tparam[opt] string a.name
-- @tparam[opt=false] bool a.return_parent_idx also return parent_idx
-- @treturn Variable selected_ids, int64 [N, 1], LoD level 2 (sources -> prefixes -> kept candidates)
-- @treturn Variable selected_scores, [N, 1], pre_scores' dtype, the same LoD
-- @treturn[opt] Variable parent_idx, int32 [N]: the prefix each kept candidate
-- extends (with return_parent_idx)
-- @param ... with a positional pre_ids: pre_scores, ids, scores, beam_size, end_id,
-- level, is_accumulated, name, return_parent_idx (Fluid's order)
-- @usage local sel_ids, sel_scores = layers.beam_search{pre_ids = pre_ids,
--   pre_scores = pre_scores, ids = topk_ids, scores = accu, beam_size = 4, end_id = 1}
function M.beam_search(a, ...)
  if is_variable(a) then
    local pre_scores, ids, scores, beam_size, end_id, level, is_accumulated, name, return_parent_idx = ...
    a = { pre_ids = a, pre_scores = pre_scores, ids = ids, scores = scores, beam_size = beam_size, end_id = end_id,
          level = level, is_accumulated = is_accumulated, name = name, return_parent_idx = return_parent_idx }
  end
  a = args("beam_search", a, nil, nil,
           "beam_size end_id ids is_accumulated level name pre_ids pre_scores return_parent_idx scores")
  local pre_ids_v = typed("beam_search", "pre_ids", a.pre_ids, { "int64" })
  local pre_scores_v = typed("beam_search", "pre_scores", a.pre_scores, FLOATS)
  local ids_v = a.ids ~= nil and typed("beam_search", "ids", a.ids, { "int64" }) or nil
  local scores_v = typed("beam_search", "scores", a.scores, FLOATS)
  local attrs = {
    level = check.int("beam_search", "level", a.level, 0),
    beam_size = check.positive_int("beam_search", "beam_size", a.beam_size),
    end_id = check.int("beam_search", "end_id", a.end_id),
    is_accumulated = check.boolean("beam_search", "is_accumulated", a.is_accumulated, true),
  }
  if attrs.level < 0 then check.fail("beam_search", "level", "a LoD level >= 0", attrs.level) end
  local want_parent = check.boolean("beam_search", "return_parent_idx", a.return_parent_idx, false)
  local helper = LayerHelper("beam_search", a)
  local sel_ids = helper:create_variable_for_type_inference("int64", true)
  local sel_scores = helper:create_variable_for_type_inference(pre_scores_v.dtype, true)
  local parent = helper:create_variable_for_type_inference("int32", true)
  local inputs = { pre_ids = { pre_ids_v }, pre_scores = { pre_scores_v }, scores = { scores_v } }
  if ids_v then inputs.ids = { ids_v } end
  helper:append_op{ type = "beam_search", inputs = inputs,
                    outputs = { selected_ids = { sel_ids }, selected_scores = { sel_scores },
                                parent_idx = { parent } },
                    attrs = attrs }
  if want_parent then return sel_ids, sel_scores, parent end
  return sel_ids, sel_scores
end

--- The hypotheses of a beam search: backtracks the tensor arrays of every
-- step's selected ids and scores (beam_search's outputs, written at steps
-- 0, 1, ...) through their LoD. Each source sentence gets its hypotheses
-- sorted by their final score, best first; a hypothesis keeps one end_id.
-- Also positional: `beam_search_decode(ids, scores, beam_size, end_id, name)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.ids the tensor array (int64) of each step's selected ids
-- @tparam Variable a.scores the tensor array (float32/float64) of each step's
-- selected scores
-- @tparam int a.beam_size the beam size of the search (>= 1)
-- @tparam int a.end_id the id that ends a sentence
-- @tparam[opt] string a.name
-- @treturn Variable sentence_ids, int64 [words], LoD level 2 (sources -> hypotheses -> words)
-- @treturn Variable sentence_scores, [words], scores' dtype, the same LoD: each word's
-- accumulated score
-- @param ... with a positional ids: scores, beam_size, end_id, name (Fluid's order)
-- @usage local sent_ids, sent_scores = layers.beam_search_decode{ids = ids_array,
--   scores = scores_array, beam_size = 4, end_id = 1}
function M.beam_search_decode(a, ...)
  if is_variable(a) then
    local scores, beam_size, end_id, name = ...
    a = { ids = a, scores = scores, beam_size = beam_size, end_id = end_id, name = name }
  end
  a = args("beam_search_decode", a, nil, nil, "beam_size end_id ids name scores")
  local ids_v = array("beam_search_decode", "ids", a.ids, { "int64" })
  local scores_v = array("beam_search_decode", "scores", a.scores, FLOATS)
  local attrs = { beam_size = check.positive_int("beam_search_decode", "beam_size", a.beam_size),
                  end_id = check.int("beam_search_decode", "end_id", a.end_id) }
  local helper = LayerHelper("beam_search_decode", a)
  local sent_ids = helper:create_variable_for_type_inference("int64", true)
  local sent_scores = helper:create_variable_for_type_inference(scores_v.dtype, true)
  helper:append_op{ type = "beam_search_decode", inputs = { Ids = { ids_v }, Scores = { scores_v } },
                    outputs = { SentenceIds = { sent_ids }, SentenceScores = { sent_scores } }, attrs = attrs }
  return sent_ids, sent_scores
end

return M
