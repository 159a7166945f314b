--- CTC layers (Fluid 1.8): warpctc, ctc_greedy_decoder and edit_distance.
-- Sequences are LoD tensors, or padded tensors with their lengths.
-- @module oar.layers.ctc
local LayerHelper = require("oar.layer_helper")
local nn = require("oar.layers.nn")
local manip = require("oar.layers.manip")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

-- the lengths of the padded form come as a pair or not at all
local function lengths(layer, a, k1, k2)
  local l1 = check.opt_variable(layer, k1, a[k1])
  local l2 = check.opt_variable(layer, k2, a[k2])
  if (l1 == nil) ~= (l2 == nil) then
    check.fail(layer, l1 and k2 or k1, "a Variable (the padded form needs " .. k1 .. " and " .. k2 .. ")", nil)
  end
  return l1, l2
end

--- The CTC loss of each sequence (a warpctc op, as Fluid builds it): the
-- negative log-probability of `label` under softmax(`input`) summed over all
-- alignments. `input` holds unnormalised scores (the softmax is applied
-- inside). With norm_by_times the gradient (not the loss) of each sequence is
-- divided by its length, as in Fluid.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input float [Lp, num_classes + 1] with one LoD level, or [Tmax, B, num_classes + 1] with input_length
-- @tparam Variable a.label int32 [Lg, 1] with one LoD level, or [B, Lmax] with label_length
-- @tparam[opt=0] int a.blank the blank class, in [0, num_classes + 1)
-- @tparam[opt=false] boolean a.norm_by_times
-- @tparam[opt] Variable a.input_length int64 [B], the padded form's steps
-- @tparam[opt] Variable a.label_length int64 [B], the padded form's label lengths
-- @treturn Variable [B, 1], the loss of each sequence
-- @usage local loss = layers.warpctc{input = scores, label = label, blank = 0}
function M.warpctc(a)
  a = args("warpctc", a, nil, nil, "input label blank norm_by_times input_length label_length")
  local x = check.variable("warpctc", "input", a.input)
  local y = check.variable("warpctc", "label", a.label)
  local blank = check.int("warpctc", "blank", a.blank, 0)
  if blank < 0 then check.fail("warpctc", "blank", "an int >= 0", blank) end
  local norm = check.boolean("warpctc", "norm_by_times", a.norm_by_times, false)
  local il, ll = lengths("warpctc", a, "input_length", "label_length")
  local helper = LayerHelper("warpctc", a)
  local inputs = { Logits = { x }, Label = { y } }
  if il then inputs.LogitsLength, inputs.LabelLength = { il }, { ll } end
  local loss = helper:create_variable_for_type_inference(x.dtype)
  local grad = helper:create_variable_for_type_inference(x.dtype, true)
  helper:append_op{ type = "warpctc", inputs = inputs, outputs = { WarpCTCGrad = { grad }, Loss = { loss } },
                    attrs = { blank = blank, norm_by_times = norm } }
  return loss
end

--- Greedy CTC decoding (as Fluid builds it): the best class of each step
-- (top_k with k = 1), then ctc_align merges repeated classes and drops blanks.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input float [Lp, num_classes + 1] with one LoD level, or [B, T, num_classes + 1] with input_length
-- @tparam int a.blank the blank class
-- @tparam[opt] Variable a.input_length int64 [B, 1], the padded form's steps
-- @tparam[opt=0] int a.padding_value fills the padded output past each row's tokens
-- @tparam[opt] string a.name
-- @treturn Variable int64 [M, 1] with a LoD; in the padded form [B, T] and its lengths [B, 1] (two values)
-- @usage local decoded = layers.ctc_greedy_decoder{input = probs, blank = 0}
function M.ctc_greedy_decoder(a)
  a = args("ctc_greedy_decoder", a, nil, nil, "input blank input_length padding_value name")
  local x = check.variable("ctc_greedy_decoder", "input", a.input)
  if a.blank == nil then check.fail("ctc_greedy_decoder", "blank", "an int >= 0", nil) end
  local blank = check.int("ctc_greedy_decoder", "blank", a.blank)
  if blank < 0 then check.fail("ctc_greedy_decoder", "blank", "an int >= 0", blank) end
  local il = check.opt_variable("ctc_greedy_decoder", "input_length", a.input_length)
  local pad = check.int("ctc_greedy_decoder", "padding_value", a.padding_value, 0)
  local helper = LayerHelper("ctc_greedy_decoder", a)
  local _, idx = nn.topk{ input = x, k = 1 }
  local out = helper:create_variable_for_type_inference("int64")
  if not il then
    helper:append_op{ type = "ctc_align", inputs = { Input = { idx } }, outputs = { Output = { out } },
                      attrs = { merge_repeated = true, blank = blank } }
    return out
  end
  local out_len = helper:create_variable_for_type_inference("int64")
  local steps = manip.squeeze{ input = idx, axes = { 2 } }
  helper:append_op{ type = "ctc_align", inputs = { Input = { steps }, InputLength = { il } },
                    outputs = { Output = { out }, OutputLength = { out_len } },
                    attrs = { merge_repeated = true, blank = blank, padding_value = pad } }
  return out, out_len
end

--- Edit (Levenshtein) distance of each hypothesis to its reference (an
-- edit_distance op, as Fluid builds it; ignored_tokens first go through a
-- sequence_erase op on each side).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int64 hypotheses [N, 1] with one LoD level, or [B, T] with input_length
-- @tparam Variable a.label int64 references [M, 1] with one LoD level, or [B, T'] with label_length
-- @tparam[opt=true] boolean a.normalized divide by the reference's length
-- @tparam[opt] {int,...} a.ignored_tokens tokens removed from both sides first (LoD form)
-- @tparam[opt] Variable a.input_length int64 [B]
-- @tparam[opt] Variable a.label_length int64 [B]
-- @treturn Variable float32 [B, 1], the distances
-- @treturn Variable int64 [1], the number of sequences
-- @usage local dist, n = layers.edit_distance{input = decoded, label = label}
function M.edit_distance(a)
  a = args("edit_distance", a, nil, nil, "input label normalized ignored_tokens input_length label_length")
  local x = check.variable("edit_distance", "input", a.input)
  local y = check.variable("edit_distance", "label", a.label)
  local norm = check.boolean("edit_distance", "normalized", a.normalized, true)
  local il, ll = lengths("edit_distance", a, "input_length", "label_length")
  local helper = LayerHelper("edit_distance", a)
  if a.ignored_tokens ~= nil then
    local toks = a.ignored_tokens
    if type(toks) ~= "table" then check.fail("edit_distance", "ignored_tokens", "a list of integers", toks) end
    for i = 1, #toks do
      if type(toks[i]) ~= "number" or toks[i] % 1 ~= 0 then
        check.fail("edit_distance", "ignored_tokens", "a list of integers", toks)
      end
    end
    if #toks > 0 then
      local ex = helper:create_variable_for_type_inference("int64")
      helper:append_op{ type = "sequence_erase", inputs = { X = { x } }, outputs = { Out = { ex } },
                        attrs = { tokens = toks } }
      local ey = helper:create_variable_for_type_inference("int64")
      helper:append_op{ type = "sequence_erase", inputs = { X = { y } }, outputs = { Out = { ey } },
                        attrs = { tokens = toks } }
      x, y = ex, ey
    end
  end
  local inputs = { Hyps = { x }, Refs = { y } }
  if il then inputs.HypsLength, inputs.RefsLength = { il }, { ll } end
  local out = helper:create_variable_for_type_inference("float32")
  local num = helper:create_variable_for_type_inference("int64")
  helper:append_op{ type = "edit_distance", inputs = inputs, outputs = { Out = { out }, SequenceNum = { num } },
                    attrs = { normalized = norm } }
  return out, num
end

return M
