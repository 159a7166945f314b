/* attr_tensor.c — reading attributes that tensor inputs override (see attr_tensor.h). */
#include <stdio.h>
#include <string.h>
#include "attr_tensor.h"

static const char *nm(const char *s) { return s ? s : "?"; }

bool oar_attr_int_list(const oar_op_desc_t *op, const char *name, int64_t *v, int max, int *n)
{
    int cnt = 0;
    *n = 0;
    int t = oar_op_desc_attr_type(op, name);
    if (t < 0) return true;
    if (t == OAR_ATTR_INTS) {
        const int32_t *a = oar_attr_ints(op, name, &cnt);
        if (cnt > max) return false;
        for (int i = 0; i < cnt; i++) v[i] = a[i];
    } else if (t == OAR_ATTR_LONGS) {
        const int64_t *a = oar_attr_longs(op, name, &cnt);
        if (cnt > max) return false;
        for (int i = 0; i < cnt; i++) v[i] = a[i];
    } else {
        return false;
    }
    *n = cnt;
    return true;
}

/* values of an int tensor; *err gets a message-ready status */
static int tensor_ints(const oar_tensor_t *t, int64_t *v, int max, int *n, char *why, size_t wn)
{
    if (!t || (oar_tensor_numel_of(t) > 0 && !oar_tensor_has_data(t))) {
        snprintf(why, wn, "has no value");
        return OAR_ERR_NOT_FOUND;
    }
    if (t->dtype != OAR_INT32 && t->dtype != OAR_INT64) {
        snprintf(why, wn, "has dtype %s, expected int32 or int64", nm(oar_dtype_name(t->dtype)));
        return OAR_ERR_DTYPE;
    }
    int64_t cnt = oar_tensor_numel_of(t);
    if (cnt > max) {
        snprintf(why, wn, "has %lld values, at most %d are supported", (long long)cnt, max);
        return OAR_ERR_SHAPE;
    }
    const void *d = oar_tensor_data((oar_tensor_t *)t);
    for (int64_t j = 0; j < cnt; j++)
        v[j] = t->dtype == OAR_INT32 ? ((const int32_t *)d)[j] : ((const int64_t *)d)[j];
    *n = (int)cnt;
    return OAR_OK;
}

static int tensor_scalar(const oar_tensor_t *t, double *v, char *why, size_t wn)
{
    if (!t || !oar_tensor_has_data(t)) { snprintf(why, wn, "has no value"); return OAR_ERR_NOT_FOUND; }
    if (oar_tensor_numel_of(t) != 1) {
        snprintf(why, wn, "must hold one value, it has %lld", (long long)oar_tensor_numel_of(t));
        return OAR_ERR_SHAPE;
    }
    const void *d = oar_tensor_data((oar_tensor_t *)t);
    switch (t->dtype) {
    case OAR_FP32: *v = *(const float *)d; break;
    case OAR_FP64: *v = *(const double *)d; break;
    case OAR_INT32: *v = *(const int32_t *)d; break;
    case OAR_INT64: *v = (double)*(const int64_t *)d; break;
    case OAR_BOOL: *v = *(const bool *)d; break;
    default:
        snprintf(why, wn, "has dtype %s, expected a number", nm(oar_dtype_name(t->dtype)));
        return OAR_ERR_DTYPE;
    }
    return OAR_OK;
}

static bool present_ic(oar_infer_ctx_t *c, const char *slot) { return slot && oar_ic_in_present(c, slot); }

int oar_ic_int_list(oar_infer_ctx_t *c, const char *tslot, const char *lslot, const char *attr,
                    int64_t *v, int max, int *n, bool *known)
{
    char why[128];
    int nl = lslot ? oar_ic_in_count(c, lslot) : 0;
    *known = true;
    if (present_ic(c, tslot)) {
        if (oar_ic_runtime(c)) {
            int rc = tensor_ints(oar_ic_in_tensor(c, tslot, 0), v, max, n, why, sizeof why);
            if (rc) return oar_ic_error(c, rc, "input %s '%s' %s", tslot, nm(oar_ic_in_name(c, tslot, 0)), why);
            return OAR_OK;
        }
        int nd;
        const int64_t *d = oar_ic_in_dims(c, tslot, 0, &nd);
        if (!d) return OAR_ERR_SHAPE;
        *known = false;
        *n = (nd == 1 && d[0] >= 0 && d[0] <= max) ? (int)d[0] : -1;
        for (int i = 0; i < *n; i++) v[i] = -1;
        return OAR_OK;
    }
    if (nl > 0) {
        if (nl > max) return oar_ic_error(c, OAR_ERR_SHAPE, "input %s has %d tensors, at most %d", lslot, nl, max);
        *n = nl;
        if (!oar_ic_runtime(c)) {
            *known = false;
            for (int i = 0; i < nl; i++) v[i] = -1;
            return OAR_OK;
        }
        for (int i = 0; i < nl; i++) {
            int k = 0;
            int rc = tensor_ints(oar_ic_in_tensor(c, lslot, i), &v[i], 1, &k, why, sizeof why);
            if (rc == OAR_OK && k != 1) { snprintf(why, sizeof why, "must hold one value"); rc = OAR_ERR_SHAPE; }
            if (rc) return oar_ic_error(c, rc, "input %s[%d] '%s' %s", lslot, i, nm(oar_ic_in_name(c, lslot, i)), why);
        }
        return OAR_OK;
    }
    if (!attr) { *n = 0; return OAR_OK; }
    if (!oar_attr_int_list(oar_ic_op(c), attr, v, max, n))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s must be INTS or LONGS with at most %d values", attr, max);
    return OAR_OK;
}

int oar_k_int_list(oar_kernel_ctx_t *k, const char *tslot, const char *lslot, const char *attr,
                   int64_t *v, int max, int *n)
{
    char why[128];
    if (tslot && oar_k_in(k, tslot, 0)) {
        int rc = tensor_ints(oar_k_in(k, tslot, 0), v, max, n, why, sizeof why);
        if (rc) return oar_k_error(k, rc, "input %s '%s' %s", tslot, nm(oar_k_in_name(k, tslot, 0)), why);
        return OAR_OK;
    }
    int nl = lslot ? oar_k_in_count(k, lslot) : 0;
    if (nl > 0) {
        if (nl > max) return oar_k_error(k, OAR_ERR_SHAPE, "input %s has %d tensors, at most %d", lslot, nl, max);
        for (int i = 0; i < nl; i++) {
            int cnt = 0;
            int rc = tensor_ints(oar_k_in(k, lslot, i), &v[i], 1, &cnt, why, sizeof why);
            if (rc == OAR_OK && cnt != 1) { snprintf(why, sizeof why, "must hold one value"); rc = OAR_ERR_SHAPE; }
            if (rc) return oar_k_error(k, rc, "input %s[%d] '%s' %s", lslot, i, nm(oar_k_in_name(k, lslot, i)), why);
        }
        *n = nl;
        return OAR_OK;
    }
    if (!attr) { *n = 0; return OAR_OK; }
    if (!oar_attr_int_list(oar_k_op(k), attr, v, max, n))
        return oar_k_error(k, OAR_ERR_INVALID, "attr %s must be INTS or LONGS with at most %d values", attr, max);
    return OAR_OK;
}

int oar_ic_scalar(oar_infer_ctx_t *c, const char *slot, const char *attr, double *v, bool *known)
{
    char why[128];
    *known = true;
    if (present_ic(c, slot)) {
        if (!oar_ic_runtime(c)) {
            int nd;
            const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
            if (!d) return OAR_ERR_SHAPE;
            int64_t cnt = 1;
            for (int i = 0; i < nd; i++) cnt = d[i] < 0 ? -1 : cnt * d[i];
            if (cnt >= 0 && cnt != 1)
                return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' must hold one value, it has %lld", slot,
                                    nm(oar_ic_in_name(c, slot, 0)), (long long)cnt);
            *known = false;
            *v = 0;
            return OAR_OK;
        }
        int rc = tensor_scalar(oar_ic_in_tensor(c, slot, 0), v, why, sizeof why);
        if (rc) return oar_ic_error(c, rc, "input %s '%s' %s", slot, nm(oar_ic_in_name(c, slot, 0)), why);
        return OAR_OK;
    }
    const oar_op_desc_t *op = oar_ic_op(c);
    *v = oar_op_desc_attr_type(op, attr) == OAR_ATTR_LONG ? (double)oar_attr_l(op, attr) : (double)oar_attr_f(op, attr);
    return OAR_OK;
}

int oar_k_scalar(oar_kernel_ctx_t *k, const char *slot, const char *attr, double *v)
{
    char why[128];
    if (slot && oar_k_in(k, slot, 0)) {
        int rc = tensor_scalar(oar_k_in(k, slot, 0), v, why, sizeof why);
        if (rc) return oar_k_error(k, rc, "input %s '%s' %s", slot, nm(oar_k_in_name(k, slot, 0)), why);
        return OAR_OK;
    }
    const oar_op_desc_t *op = oar_k_op(k);
    *v = oar_op_desc_attr_type(op, attr) == OAR_ATTR_LONG ? (double)oar_attr_l(op, attr) : (double)oar_attr_f(op, attr);
    return OAR_OK;
}

int oar_k_scalar_at(oar_kernel_ctx_t *k, int slot, const char *sname, double *v)
{
    const oar_tensor_t *t = oar_k_input(k, slot, 0);
    if (!t) return OAR_OK;
    char why[128];
    int rc = tensor_scalar(t, v, why, sizeof why);
    if (rc) return oar_k_error(k, rc, "input %s '%s' %s", nm(sname), nm(oar_k_input_name(k, slot, 0)), why);
    return OAR_OK;
}

int oar_k_int_list_at(oar_kernel_ctx_t *k, int tslot, const char *tname, int lslot, const char *lname,
                      int64_t *v, int max, int *n, bool *given)
{
    char why[128];
    *given = true;
    const oar_tensor_t *t = oar_k_input(k, tslot, 0);
    if (t) {
        int rc = tensor_ints(t, v, max, n, why, sizeof why);
        if (rc) return oar_k_error(k, rc, "input %s '%s' %s", nm(tname), nm(oar_k_input_name(k, tslot, 0)), why);
        return OAR_OK;
    }
    int nl = oar_k_nin(k, lslot);
    if (nl <= 0) { *given = false; return OAR_OK; }
    if (nl > max) return oar_k_error(k, OAR_ERR_SHAPE, "input %s has %d tensors, at most %d", nm(lname), nl, max);
    for (int i = 0; i < nl; i++) {
        int cnt = 0;
        int rc = tensor_ints(oar_k_input(k, lslot, i), &v[i], 1, &cnt, why, sizeof why);
        if (rc == OAR_OK && cnt != 1) { snprintf(why, sizeof why, "must hold one value"); rc = OAR_ERR_SHAPE; }
        if (rc) return oar_k_error(k, rc, "input %s[%d] '%s' %s", nm(lname), i, nm(oar_k_input_name(k, lslot, i)), why);
    }
    *n = nl;
    return OAR_OK;
}
