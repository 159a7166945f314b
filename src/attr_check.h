/* attr_check.h — the attributes an op may carry (src/attr_check.c). */
#ifndef OAR_ATTR_CHECK_H
#define OAR_ATTR_CHECK_H
#include "op.h"

/* Every attr of op is declared by its definition, the common list, or (for
 * "<fwd>_grad" ops, which copy the forward op's attrs) the forward op's
 * definition; attrs oar cannot honour (the table in attr_check.c) hold
 * their default.
 * Errors name the op, the attribute and its value. */
OAR_API int oar_op_check_attrs(const oar_op_desc_t *op);
/* true when an attr of type `have` is acceptable where the op declares
 * another type (INTS for LONGS and back, for attrs the table marks) */
OAR_API bool oar_attr_kind_accepted(const char *op_type, const char *name, int have);
#endif
