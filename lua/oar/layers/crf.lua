--- oar.layers.crf: sequence labelling (Fluid 1.8's linear_chain_crf,
-- crf_decoding and chunk_eval). Merged into oar.layers.
--
--   local emission = layers.fc{input = emb, size = num_tags}
--   local cost = layers.linear_chain_crf{input = emission, label = tags, param_attr = "crfw"}
--   local path = layers.crf_decoding{input = emission, param_attr = "crfw"}
--   local p, r, f1, ni, nl, nc = layers.chunk_eval{input = path, label = tags,
--     chunk_scheme = "IOB", num_chunk_types = 3}
--
-- The CRF's transition parameter is [(D + 2), D] (row 0 start weights, row
-- 1 end weights, then tag-to-tag weights), Xavier-initialised as Fluid's;
-- crf_decoding finds it by the name given to linear_chain_crf's param_attr.
-- @module oar.layers.crf
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")
local param_attr = require("oar.param_attr")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

-- D, the tag count: the last dim of input ([N, D], or [B, T, D] with length)
local function tags_of(layer, input, length)
  local shape = input.shape
  local want = length and 3 or 2
  local d = shape[want]
  if #shape ~= want or d == nil or d <= 0 then
    raise(string.format("layers.%s: 'input' ('%s') must be %s with a known D, got shape %s", layer, input.name,
      length and "[B, T, D] (with length)" or "[N, D] (a LoD tensor)", framework.shape_text(shape)))
  end
  return d
end

--- Linear-chain CRF cost: the negative log-likelihood of each sequence's
-- labels (Fluid's LogLikelihood, which despite its name is -log P). Creates
-- the transition parameter [(D + 2), D].
-- @tparam table a keyword arguments:
-- @tparam Variable a.input the unscaled emission scores: a LoD tensor [N, D], or [B, T, D] with length
-- @tparam Variable a.label int64 tags in [0, D): [N, 1] (LoD), or [B, T] with length
-- @tparam[opt] ParamAttr|string a.param_attr the transition parameter's attributes (name it to decode with it)
-- @tparam[opt] Variable a.length int64 [B], the sequence lengths of a padded input
-- @tparam[opt] string a.name
-- @treturn Variable [number of sequences, 1], the cost of each sequence
-- @raise when input has no known tag count
-- @usage local cost = layers.mean(layers.linear_chain_crf{input = emission, label = tags, param_attr = "crfw"})
function M.linear_chain_crf(a)
  a = args("linear_chain_crf", a, nil, nil, "input label length name param_attr")
  local input = check.variable("linear_chain_crf", "input", a.input)
  local label = check.variable("linear_chain_crf", "label", a.label)
  local length = check.opt_variable("linear_chain_crf", "length", a.length)
  local d = tags_of("linear_chain_crf", input, length)
  local helper = LayerHelper("linear_chain_crf", a)
  local dtype = input.dtype
  local transition = helper:create_parameter(helper:param_attr(), { d + 2, d }, dtype, false)
  local alpha = helper:create_variable_for_type_inference(dtype)
  local emission_exps = helper:create_variable_for_type_inference(dtype)
  local transition_exps = helper:create_variable_for_type_inference(dtype)
  local ll = helper:create_variable_for_type_inference(dtype)
  local inputs = { Emission = { input }, Transition = { transition }, Label = { label } }
  if length then inputs.Length = { length } end
  helper:append_op{ type = "linear_chain_crf", inputs = inputs,
    outputs = { Alpha = { alpha }, EmissionExps = { emission_exps }, TransitionExps = { transition_exps },
                LogLikelihood = { ll } } }
  return ll
end

--- Viterbi decoding with a linear_chain_crf's transition parameter, found
-- by the name of param_attr. With a label, the result is 1 where the decoded
-- tag equals the label, 0 elsewhere.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input the emission scores, as given to linear_chain_crf
-- @tparam ParamAttr|string a.param_attr names the transition parameter (linear_chain_crf's)
-- @tparam[opt] Variable a.label int64 tags, input's rows
-- @tparam[opt] Variable a.length int64 [B], the sequence lengths of a padded input
-- @tparam[opt] string a.name
-- @treturn Variable int64: [N, 1] with input's LoD, or [B, T] with length
-- @raise when no parameter has that name
-- @usage local path = layers.crf_decoding{input = emission, param_attr = "crfw"}
function M.crf_decoding(a)
  a = args("crf_decoding", a, nil, nil, "input label length name param_attr")
  local input = check.variable("crf_decoding", "input", a.input)
  local label = check.opt_variable("crf_decoding", "label", a.label)
  local length = check.opt_variable("crf_decoding", "length", a.length)
  local d = tags_of("crf_decoding", input, length)
  local attr = param_attr.to_attr(a.param_attr, "crf_decoding", "param_attr")
  if not attr or not attr.name then
    raise("layers.crf_decoding: 'param_attr' must name the transition parameter of a linear_chain_crf")
  end
  local helper = LayerHelper("crf_decoding", a)
  local transition = helper.main_program:global_block():_find_var_local(attr.name)
  if not transition or not framework.is_parameter(transition) then
    raise(string.format("layers.crf_decoding: no parameter '%s' (give linear_chain_crf param_attr = '%s' first)",
      attr.name, attr.name))
  end
  local ts = transition.shape
  if #ts ~= 2 or ts[1] ~= d + 2 or ts[2] ~= d then
    raise(string.format("layers.crf_decoding: parameter '%s' has shape %s; input has %d tags, which needs [%d, %d]",
      attr.name, framework.shape_text(ts), d, d + 2, d))
  end
  local path = helper:create_variable_for_type_inference("int64", true)
  local inputs = { Emission = { input }, Transition = { transition } }
  if label then inputs.Label = { label } end
  if length then inputs.Length = { length } end
  helper:append_op{ type = "crf_decoding", inputs = inputs, outputs = { ViterbiPath = { path } } }
  return path
end

local SCHEMES = { IOB = true, IOE = true, IOBES = true, plain = true }

--- Chunk evaluation of a tagging: precision, recall and F1 of the inferred
-- chunks, and the counts they come from (for oar.metrics.ChunkEvaluator).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int64 inferred tags: [N, 1] (LoD), or [B, T] with seq_length
-- @tparam Variable a.label int64 true tags, input's shape and LoD
-- @tparam string a.chunk_scheme "IOB", "IOE", "IOBES" or "plain"
-- @tparam int a.num_chunk_types the number of chunk types
-- @tparam[opt] {int,...} a.excluded_chunk_types chunk types left out of the counts
-- @tparam[opt] Variable a.seq_length int64 [B], the lengths of padded inputs
-- @tparam[opt] string a.name
-- @treturn Variable precision, float32 [1]
-- @treturn Variable recall, float32 [1]
-- @treturn Variable f1_score, float32 [1]
-- @treturn Variable num_infer_chunks, int64 [1]
-- @treturn Variable num_label_chunks, int64 [1]
-- @treturn Variable num_correct_chunks, int64 [1]
-- @raise on an unknown chunk_scheme
-- @usage local p, r, f1, ni, nl, nc = layers.chunk_eval{input = path, label = tags,
--   chunk_scheme = "IOB", num_chunk_types = 3}
function M.chunk_eval(a)
  a = args("chunk_eval", a, nil, nil, "chunk_scheme excluded_chunk_types input label name num_chunk_types seq_length")
  local input = check.variable("chunk_eval", "input", a.input)
  local label = check.variable("chunk_eval", "label", a.label)
  local seq_length = check.opt_variable("chunk_eval", "seq_length", a.seq_length)
  local scheme = check.string("chunk_eval", "chunk_scheme", a.chunk_scheme)
  if not SCHEMES[scheme] then check.fail("chunk_eval", "chunk_scheme", "one of IOB, IOE, IOBES, plain", scheme) end
  local ntypes = check.positive_int("chunk_eval", "num_chunk_types", a.num_chunk_types)
  local excluded = a.excluded_chunk_types or {}
  if type(excluded) ~= "table" then check.fail("chunk_eval", "excluded_chunk_types", "a list of integers", excluded) end
  for i = 1, #excluded do check.int("chunk_eval", "excluded_chunk_types[" .. i .. "]", excluded[i]) end
  local helper = LayerHelper("chunk_eval", a)
  local function var(dtype) return helper:create_variable_for_type_inference(dtype, true) end
  local p, r, f1 = var("float32"), var("float32"), var("float32")
  local ni, nl, nc = var("int64"), var("int64"), var("int64")
  local inputs = { Inference = { input }, Label = { label } }
  if seq_length then inputs.SeqLength = { seq_length } end
  helper:append_op{ type = "chunk_eval", inputs = inputs,
    outputs = { Precision = { p }, Recall = { r }, ["F1-Score"] = { f1 }, NumInferChunks = { ni },
                NumLabelChunks = { nl }, NumCorrectChunks = { nc } },
    attrs = { num_chunk_types = ntypes, chunk_scheme = scheme, excluded_chunk_types = excluded } }
  return p, r, f1, ni, nl, nc
end

return M
