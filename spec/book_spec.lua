-- The Lua translations of Fluid 1.8's book programs under examples/book/
-- train: each runs a few steps (small sizes, synthetic data where the data
-- set is not on the machine) and its loss must go down: the mean of the
-- last five steps below 0.9 times the mean of the first five.
local fashion_mnist = require("oar.dataset.fashion_mnist")
local book = dofile("examples/book/common.lua")

local function assert_learns(name, losses)
  local n = #losses
  local first, last = book.mean(losses, 1, 5), book.mean(losses, n - 4, n)
  for i, l in ipairs(losses) do assert(l == l and l < 100, name .. ": loss " .. tostring(l) .. " at step " .. i) end
  assert(last < 0.9 * first, string.format("%s: the loss did not go down: first five steps %.4f, last five %.4f",
    name, first, last))
end

local function data_installed()
  local dir = fashion_mnist.data_dir()
  local f = io.open(dir .. "/train-images-idx3-ubyte.gz", "rb") or io.open(dir .. "/train-images-idx3-ubyte", "rb")
  if f then f:close() end
  return f ~= nil
end

describe("book programs (examples/book)", function()
  it("recognize_digits conv_net (nets.simple_img_conv_pool) learns Fashion-MNIST", function()
    if not data_installed() then
      pending("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
      return
    end
    local m = dofile("examples/book/recognize_digits_conv.lua")
    assert_learns("recognize_digits_conv", m.train{ steps = 20, batch_size = 64 })
  end)

  it("image_classification resnet_cifar10 (bias_attr = true) learns synthetic CIFAR-shaped images", function()
    local m = dofile("examples/book/image_classification_resnet.lua")
    assert_learns("resnet_cifar10", m.train{ steps = 16, depth = 8, batch_size = 16 })
  end)

  it("image_classification vgg16_bn_drop (nets.img_conv_group) learns synthetic CIFAR-shaped images", function()
    local m = dofile("examples/book/image_classification_vgg.lua")
    assert_learns("vgg16_bn_drop", m.train{ steps = 40, width = 16, batch_size = 32, lr = 0.003 })
  end)

  it("understand_sentiment convolution_net (nets.sequence_conv_pool) learns synthetic reviews", function()
    local m = dofile("examples/book/understand_sentiment_conv.lua")
    assert_learns("convolution_net", m.train{ steps = 30, dict_dim = 200, lr = 0.02 })
  end)

  it("understand_sentiment dyn_rnn_lstm (DynamicRNN, bias_attr = true) learns synthetic reviews", function()
    local m = dofile("examples/book/understand_sentiment_dynrnn.lua")
    assert_learns("dyn_rnn_lstm", m.train{ steps = 30, dict_dim = 200, lstm_size = 16, lr = 0.02 })
  end)

  it("label_semantic_roles db_lstm (dynamic_lstm stack, linear_chain_crf) learns synthetic SRL; chunk F1 rises", function()
    local m = dofile("examples/book/label_semantic_roles.lua")
    local losses, f1 = m.train{ steps = 200, depth = 2, lr = 0.2 }
    assert_learns("label_semantic_roles", losses)
    local n = #f1
    local first, last = book.mean(f1, 1, 20), book.mean(f1, n - 19, n)
    assert(last > first + 0.3, string.format("label_semantic_roles: chunk F1 %.3f -> %.3f", first, last))
  end)

  it("ctc_synthetic (warpctc, ctc_greedy_decoder, edit_distance) reaches a low error rate", function()
    local m = dofile("examples/book/ctc_synthetic.lua")
    local losses, err = m.train{ steps = 200 }
    assert_learns("ctc_synthetic", losses)
    local n = #err
    local first, last = book.mean(err, 1, 10), book.mean(err, n - 19, n)
    assert(first > 0.5 and last < 0.15, string.format("ctc_synthetic: error rate %.3f -> %.3f", first, last))
  end)

  it("machine_translation (rnn, GRUCell, BeamSearchDecoder, dynamic_decode) learns a synthetic reverse task "
     .. "and decodes as a plain-Lua beam search", function()
    local m = dofile("examples/book/machine_translation.lua")
    local losses, scope, o = m.train{ steps = 60 }
    assert_learns("machine_translation", losses)
    local feed = m.batch(book.rng(99), 6, o)
    local ids, logp, _, r = m.decode(o, scope, feed)
    local want_ids, want_logp = require("spec.helpers.mt_ref")(scope, r.parts, o, feed.src:totable(),
      feed.src_sequence_length:totable(), m.BOS, m.EOS)
    assert.are.same(want_ids, ids)
    for n = 1, #want_logp do
      for k = 1, #want_logp[n] do
        assert(math.abs(want_logp[n][k] - logp[n][k]) < 1e-3,
          string.format("entry %d beam %d: score %.6f, plain Lua %.6f", n, k, logp[n][k], want_logp[n][k]))
      end
    end
  end)
end)
