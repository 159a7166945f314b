/* bounded.h — limits on the work one run may do: the cancel flag of an
 * executor (oar_executor_cancel) and the while-iteration bounds. */
#ifndef OAR_BOUNDED_H
#define OAR_BOUNDED_H
#include "oar.h"

/* iteration bound of while ops: programs in general / models loaded for inference (0: none) */
extern int64_t oar_flag_max_while_iterations;
extern int64_t oar_flag_inference_max_while_iterations;
/* OAR_ERR_CANCELLED (with a message) when e's run was asked to stop */
int oar_executor_check_cancel(oar_executor_t *e);
/* set by the SIGINT handler of oar_sigint_cancels_runs: every run stops */
extern int oar_interrupt_flag;
#endif
