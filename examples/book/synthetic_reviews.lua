-- examples/book/synthetic_reviews.lua: IMDB-shaped data for the
-- understand_sentiment programs when IMDB is not on the machine: "reviews"
-- of 5 to max_len word ids from a vocabulary of dict_dim. Ids 0..9 are
-- positive words, 10..19 negative ones, the rest neutral; a review of label
-- 1 (positive) draws a positive word at a position with probability 0.2
-- and a negative one with 0.05, a review of label 0 the other way round.
-- Loaded with dofile; returns batches(seed, batch_size, dict_dim, max_len)
-- -> function() words (int64 [total, 1], LoD), labels (int64 [n, 1]).
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

return function(seed, batch_size, dict_dim, max_len)
  max_len = max_len or 30
  assert(dict_dim > 20, "synthetic_reviews: dict_dim must exceed 20")
  local rng = book.rng(seed)
  return function()
    local seqs, labels = {}, {}
    for b = 1, batch_size do
      local label = rng.int(2)
      local len = 5 + rng.int(max_len - 4)
      local s = {}
      for t = 1, len do
        local u = rng.uniform()
        local own, other = label == 1 and 0 or 10, label == 1 and 10 or 0
        if u < 0.2 then s[t] = own + rng.int(10)
        elseif u < 0.25 then s[t] = other + rng.int(10)
        else s[t] = 20 + rng.int(dict_dim - 20) end
      end
      seqs[b], labels[b] = s, label
    end
    return book.word_batch(seqs, labels)
  end
end
