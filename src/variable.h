/* variable.h — the typed holder a scope owns. Created empty; the payload is
 * made by the first accessor of a kind, and asking for another kind is an error. */
#ifndef OAR_VARIABLE_H
#define OAR_VARIABLE_H
#include "oar.h"

typedef struct oar_selected_rows {
    int64_t height;            /* rows of the dense equivalent */
    int64_t *rows; int64_t nrows, cap;
    oar_tensor_t *value;       /* [nrows, ...] */
} oar_selected_rows_t;

typedef struct oar_tensor_array {
    oar_tensor_t **items; int n, cap;   /* items may be NULL (unwritten) */
} oar_tensor_array_t;

typedef struct oar_step_scopes {
    oar_scope_t **scopes; int n, cap;   /* each retained */
} oar_step_scopes_t;

typedef struct oar_rank_item { int64_t index, length; } oar_rank_item_t;
typedef struct oar_rank_table {
    int level;
    oar_rank_item_t *items; int64_t n;  /* sorted by length, descending, stable */
    int64_t *coarse_lod; int64_t coarse_n; /* the LoD above `level` */
} oar_rank_table_t;

struct oar_variable {
    char *name;
    int type;                           /* 0 while empty */
    oar_scope_t *scope;                 /* owner (not retained) */
    union {
        oar_tensor_t *tensor;           /* LOD_TENSOR */
        oar_selected_rows_t *rows;      /* SELECTED_ROWS */
        oar_tensor_array_t *array;      /* LOD_TENSOR_ARRAY */
        oar_step_scopes_t *steps;       /* STEP_SCOPES */
        oar_rank_table_t *rank;         /* LOD_RANK_TABLE */
    } u;
    oar_tensor_t *spare;                /* a cleared tensor kept for reuse (executor runs) */
};

oar_variable_t *oar_variable_new(const char *name, oar_scope_t *owner);
void oar_variable_free(oar_variable_t *v);
/* get-or-create the payload of a kind; NULL + error if the var holds another kind */
OAR_API oar_tensor_t *oar_var_tensor(oar_variable_t *v);
OAR_API oar_selected_rows_t *oar_var_selected_rows(oar_variable_t *v);
OAR_API oar_tensor_array_t *oar_var_array(oar_variable_t *v);
OAR_API oar_step_scopes_t *oar_var_step_scopes(oar_variable_t *v);
OAR_API oar_rank_table_t *oar_var_rank_table(oar_variable_t *v);
/* array helpers */
OAR_API int oar_array_resize(oar_tensor_array_t *a, int n);
/* step scopes: drop all kept scopes */
OAR_API void oar_step_scopes_clear(oar_step_scopes_t *s);
OAR_API int oar_step_scopes_push(oar_step_scopes_t *s, oar_scope_t *scope); /* retains */
/* drops whatever payload the variable holds; it becomes empty */
OAR_API void oar_variable_clear(oar_variable_t *v);
/* the same, but a tensor nobody else holds is reset and kept for the next
 * oar_var_tensor (a bound executor clears its variables every run) */
void oar_variable_recycle(oar_variable_t *v);
#endif
