/* scope.h — internal layout of the scope hierarchy (Fluid's design document
 * on scopes; docs/design.md, "Scopes, variables and tensors").
 * A scope owns its variables; a parent holds a reference on each kid, and a
 * kid holds one on its parent, so handles may be released in any order. */
#ifndef OAR_SCOPE_H
#define OAR_SCOPE_H
#include "oar.h"
#include "strmap.h"

struct oar_scope {
    int refcount;
    oar_scope_t *parent;          /* retained */
    oar_variable_t **vars; int nvars, capv;  /* creation order */
    oar_strmap_t index;           /* name -> position in vars */
    oar_scope_t **kids; int nkids, capk;     /* retained */
    /* scope.c's bookkeeping: references held by the parent's kid list, by kids
     * and by STEP_SCOPES variables (the rest are external); cycles among them
     * are collected once no scope in the cycle is held from outside. */
    int internal_refs;
    int gc_state, gc_count;
};

/* bumped whenever a variable is erased from any scope: an executor's bound
 * variable table is valid only while the epoch it was bound at holds */
extern uint64_t oar_scope_epoch;

/* a kid not registered in parent's kid list (temporaries of one run) */
OAR_API int oar_scope_new_detached_kid(oar_scope_t *parent, oar_scope_t **out);
/* references held by STEP_SCOPES variables (variable.c); unlike
 * oar_scope_retain they take part in cycle collection */
oar_scope_t *oar_scope_retain_internal(oar_scope_t *s);
void oar_scope_release_internal(oar_scope_t *s);
#endif
