/* tools/cuda_emu/cuda_fp16.h — the emulated cuda_fp16.h: __half as its bits, the
 * conversions through src/ops/half_bits.h (round to nearest even) */
#ifndef EMU_CUDA_FP16_H
#define EMU_CUDA_FP16_H
#include <stdint.h>
#include "cpu_half.h"
struct __half { uint16_t x; };
static inline float __half2float(__half h) { return (float)oar_half_to_double(h.x); }
static inline __half __float2half_rn(float f) { __half h; h.x = oar_half_from_double((double)f); return h; }
static inline __half __double2half(double d) { __half h; h.x = oar_half_from_double(d); return h; }
#endif
