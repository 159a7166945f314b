/* desc_check.h — checks of op descs against their definitions
 * (desc_opcheck.c), shared by insertion, parsing and attr setters. */
#ifndef OAR_DESC_CHECK_H
#define OAR_DESC_CHECK_H
#include "op.h"

/* Slots (required ones present, a required output never @EMPTY@; unknown
 * ones refused when strict_slots), attr types (converted where exact),
 * ranges; missing attrs get their declared defaults. */
int oar_op_check_def(oar_op_desc_t *op, const oar_op_def_t *def, bool strict_slots);
/* The same without changing anything (attrs absent are not judged). */
int oar_op_check_def_const(const oar_op_desc_t *op, const oar_op_def_t *def);
/* a scalar attr of the declared type inside the declared range */
int oar_attr_check_range(const oar_attr_def_t *ad, const oar_attr_t *a);
/* does running block `from` ever run block `to` (through BLOCK/BLOCKS attrs)? */
bool oar_program_block_reaches(const oar_program_t *p, int from, int to);
/* target (-1: unset) is a sub-block an op of b may run: exists, not 0, not b,
 * and does not run b again */
int oar_block_check_sub_block(const oar_block_t *b, const char *attr, int target);
int oar_op_check_block_attrs(const oar_op_desc_t *op, const oar_block_t *b);
/* a new value of attr `name` on op (checked only when op is in a block) */
int oar_attr_check_attached(const oar_op_desc_t *op, const char *name, const oar_attr_t *val);
int oar_attr_check_removal(const oar_op_desc_t *op, const char *name);
/* parse: every op of a registered type checked and given its defaults */
OAR_API int oar_program_normalize(oar_program_t *p);
#endif
