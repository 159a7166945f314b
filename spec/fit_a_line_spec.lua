-- examples/fit_a_line.lua converges: the best achievable mean squared error
-- is the noise variance, so the test loss must end close to it.
local fit = dofile("examples/fit_a_line.lua")

describe("fit_a_line", function()
  for _, noise in ipairs({ 0.1, 0.3 }) do
    it("reaches the noise floor with noise " .. noise, function()
      local train, test = fit.train{ passes = 10, noise = noise }
      local floor = noise * noise
      assert.are.equal(10, #test)
      assert.is_true(test[10] < 1.5 * floor,
        string.format("test loss %.5f is not within 1.5x the noise variance %.5f", test[10], floor))
      assert.is_true(train[10] < 1.5 * floor, string.format("train loss %.5f", train[10]))
      assert.is_true(train[1] > 5 * train[10], "the loss did not fall")
    end)
  end

  it("makes the same data every time", function()
    local x1, y1 = fit.make_data(4, 0.1, 3)
    local x2, y2 = fit.make_data(4, 0.1, 3)
    assert.are.same(x1, x2)
    assert.are.same(y1, y2)
    assert.are.equal(fit.FEATURES, #x1[1])
  end)
end)
