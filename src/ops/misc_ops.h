/* misc_ops.h — slots and decoded attributes of clip_by_norm
 * (src/ops/misc_ops.c), read by every place's kernels. assign_value, shape
 * and print run in the definition file and keep theirs there. */
#ifndef OAR_OPS_MISC_OPS_H
#define OAR_OPS_MISC_OPS_H

enum { OAR_CBN_X = 0 };
enum { OAR_CBN_OUT = 0 };
typedef struct oar_clip_by_norm_attrs { float max_norm; } oar_clip_by_norm_attrs_t;
#endif
