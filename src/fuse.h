/* fuse.h — inference passes over a program's descs (the predictor runs them
 * after loading). */
#ifndef OAR_FUSE_H
#define OAR_FUSE_H
#include "oar.h"

/* mul + elementwise_add (+ relu) -> fc in block block_idx (src/fuse_fc.c);
 * `keep` names variables that must stay (the fetch targets); *nfused gets
 * the number of chains fused (nfused may be NULL) */
int oar_fuse_fc(oar_program_t *prog, int block_idx, const char *const *keep, int nkeep, int *nfused);
#endif
