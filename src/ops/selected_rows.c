/*
 * selected_rows.c — inference of merge_selected_rows,
 * get_tensor_from_selected_rows, split_selected_rows and
 * lookup_table_dequant (declared in selected_rows.ops, kernels in
 * kernels/cpu/selected_rows.c). A SelectedRows output's rows depend on the
 * data: its declaration is typed here at compile time and the kernel fills
 * it (oar_k_output_resized) at run time.
 */
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm */
#include "ops/selected_rows.h"

/* compile time: output `slot` (every argument) is a SelectedRows of X's shape */
static int sr_outputs_like_x(oar_infer_ctx_t *c, const char *slot, const int64_t *height)
{
    if (oar_ic_runtime(c)) return OAR_OK;   /* the kernel fills the rows */
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, d, sizeof(int64_t) * (size_t)nd);
    for (int i = 0; i < oar_ic_out_count(c, slot); i++) {
        if (height && nd > 0) od[0] = height[i];
        OAR_TRY(oar_ic_set_out_var_type(c, slot, i, OAR_VAR_SELECTED_ROWS));
        OAR_TRY(oar_ic_set_out(c, slot, i, od, nd, oar_ic_in_dtype(c, "X", 0)));
    }
    return OAR_OK;
}

static int merge_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    return sr_outputs_like_x(c, "Out", NULL);
}

static int get_tensor_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt >= 0 && vt != OAR_VAR_SELECTED_ROWS)
        return oar_ic_error(c, OAR_ERR_INVALID, "input X '%s' is not a SelectedRows (a %s)",
                            nm(oar_ic_in_name(c, "X", 0)),
                            vt == OAR_VAR_LOD_TENSOR ? "LoD tensor" : "variable of another type");
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, d, sizeof(int64_t) * (size_t)nd);
    if (!oar_ic_runtime(c) && nd > 0) od[0] = -1;   /* the row count, not the height */
    return oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0));
}

static int split_infer(oar_infer_ctx_t *c)
{
    const oar_splitsr_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n = oar_ic_out_count(c, "Out");
    if (a->height_sections.n != n)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr height_sections has %d values but Out has %d variables; one "
                            "section per output", a->height_sections.n, n);
    for (int i = 0; i < n; i++)
        if (a->height_sections.v[i] < 0)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr height_sections[%d] is %lld; heights are >= 0", i,
                                (long long)a->height_sections.v[i]);
    return sr_outputs_like_x(c, "Out", a->height_sections.v);
}

static int dequant_infer(oar_infer_ctx_t *c)
{
    const int64_t *w;
    OAR_TRY(oar_ic_check_2d(c, "W", -1, -1, "[V, Q] with Q > 2", &w));
    int wdt = oar_ic_in_dtype(c, "W", 0), idt = oar_ic_in_dtype(c, "Ids", 0);
    if (wdt >= 0 && wdt != OAR_FP32)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input W '%s' has dtype %s; float32 (packed bytes) expected",
                            nm(oar_ic_in_name(c, "W", 0)), nm(oar_dtype_name(wdt)));
    if (idt >= 0 && idt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Ids '%s' has dtype %s; int64 expected",
                            nm(oar_ic_in_name(c, "Ids", 0)), nm(oar_dtype_name(idt)));
    if (w[1] >= 0 && w[1] <= 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input W '%s' has %lld columns; min, max and at least one packed float "
                            "are needed", nm(oar_ic_in_name(c, "W", 0)), (long long)w[1]);
    int nd;
    const int64_t *ids = oar_ic_in_dims(c, "Ids", 0, &nd);
    if (!ids) return OAR_ERR_SHAPE;
    if (nd < 1 || ids[nd - 1] != 1) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Ids '%s' has shape %s; its last dim must be 1",
                            nm(oar_ic_in_name(c, "Ids", 0)), oar_shape_str(ids, nd, b, sizeof b));
    }
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, ids, sizeof(int64_t) * (size_t)nd);
    od[nd - 1] = w[1] >= 0 ? (w[1] - 2) * 4 : -1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, OAR_FP32));
    return oar_ic_share_lod(c, "Ids", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/selected_rows.h"
