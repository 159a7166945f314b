/* profiler.h — per-op-type timing behind the "profile" flag. */
#ifndef OAR_PROFILER_H
#define OAR_PROFILER_H
#include <stdint.h>
extern int oar_flag_profile;
double oar_profile_now(void);
void oar_profile_add(const char *type, double seconds);
/* a run's peak of buffer bytes above those live when it started */
void oar_profile_run_peak(int64_t bytes);
#endif
