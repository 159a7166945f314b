/* profiler.h — per-op-type timing behind the "profile" flag. */
#ifndef OAR_PROFILER_H
#define OAR_PROFILER_H
extern int oar_flag_profile;
double oar_profile_now(void);
void oar_profile_add(const char *type, double seconds);
#endif
