-- The sequence-to-batch layout of lstm/gru (src/ops/seq_layout.c), through
-- the C functions the CPU and CUDA kernels call: sorted order, step starts,
-- row map and the previous-step rows the CUDA grads gather by, against
-- values worked out by hand from the layout's definition.
local ffi = require("ffi")
local C = require("oar.lib").C

ffi.cdef[[
typedef struct oar_seqb {
    int64_t nseq, rows, nsteps;
    int64_t *order, *step_start, *row_of;
} oar_seqb_t;
int oar_seqb_make(oar_seqb_t *b, const int64_t *offs, int64_t noffs, bool reverse);
void oar_seqb_free(oar_seqb_t *b);
void oar_seqb_prev_rows(const oar_seqb_t *b, const int64_t *map, int64_t *prev);
]]

local function list(p, n)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = tonumber(p[i]) end
  return t
end

-- the layout of `lod` as Lua lists, and the previous rows in both codings
local function layout(lod, reverse)
  local offs = ffi.new("int64_t[?]", #lod, lod)
  local b = ffi.new("oar_seqb_t")
  assert.are.equal(0, C.oar_seqb_make(b, offs, #lod, reverse))
  local rows, nseq, nsteps = tonumber(b.rows), tonumber(b.nseq), tonumber(b.nsteps)
  local prev_lod, prev_batch = ffi.new("int64_t[?]", math.max(rows, 1)), ffi.new("int64_t[?]", math.max(rows, 1))
  C.oar_seqb_prev_rows(b, b.row_of, prev_lod)
  C.oar_seqb_prev_rows(b, nil, prev_batch)
  local r = { rows = rows, nseq = nseq, nsteps = nsteps, order = list(b.order, nseq),
              step_start = list(b.step_start, nsteps + 1), row_of = list(b.row_of, rows),
              prev_lod = list(prev_lod, rows), prev_batch = list(prev_batch, rows) }
  C.oar_seqb_free(b)
  return r
end

describe("sequence-to-batch layout", function()
  it("sorts by length (stable), steps hold the sequences still running, prefix to prefix", function()
    -- lengths 2, 3, 1: order {1, 0, 2}; step 0 rows 2, 0, 5; step 1 rows 3, 1; step 2 row 4
    local l = layout({ 0, 2, 5, 6 }, false)
    assert.are.same({ 1, 0, 2 }, l.order)
    assert.are.same({ 0, 3, 5, 6 }, l.step_start)
    assert.are.same({ 2, 0, 5, 3, 1, 4 }, l.row_of)
    -- step 0 reads H0 rows order[s] (coded -1 - row); later steps the previous
    -- step's row of the same sequence: in the tensor's order, or its batch row
    assert.are.same({ -2, -1, -3, 2, 0, 3 }, l.prev_lod)
    assert.are.same({ -2, -1, -3, 0, 1, 3 }, l.prev_batch)
  end)

  it("reversed: step t is the t-th row from each sequence's end", function()
    local l = layout({ 0, 2, 5, 6 }, true)
    assert.are.same({ 1, 0, 2 }, l.order)
    assert.are.same({ 4, 1, 5, 3, 0, 2 }, l.row_of)
    assert.are.same({ -2, -1, -3, 4, 1, 3 }, l.prev_lod)
    assert.are.same({ -2, -1, -3, 0, 1, 3 }, l.prev_batch)
  end)

  it("equal lengths keep their order; empty sequences sort last and take no step", function()
    local l = layout({ 0, 2, 2, 4, 5 }, false)   -- lengths 2, 0, 2, 1
    assert.are.same({ 0, 2, 3, 1 }, l.order)
    assert.are.same({ 0, 3, 5 }, l.step_start)
    assert.are.same({ 0, 2, 4, 1, 3 }, l.row_of)
    assert.are.same({ -1, -3, -4, 0, 2 }, l.prev_lod)
    assert.are.same({ -1, -3, -4, 0, 1 }, l.prev_batch)
  end)

  it("no rows at all", function()
    local l = layout({ 0, 0, 0 }, false)
    assert.are.equal(0, l.rows)
    assert.are.equal(0, l.nsteps)
    assert.are.same({ 0, 1 }, l.order)
    assert.are.same({ 0 }, l.step_start)
  end)
end)
