/* half_bits.h — IEEE binary16 ("float16", stored as its raw uint16_t bits) to and
 * from double on the CPU: the cast and float16 kernels, save's save_as_fp16
 * (io_ops.c) and the CUDA emulator share it. Rounding is to nearest even, once:
 * float32 values convert to double exactly first. */
#ifndef OAR_OPS_HALF_BITS_H
#define OAR_OPS_HALF_BITS_H
#include <math.h>
#include <stdint.h>

static inline uint16_t oar_half_from_double(double x)
{
    const uint16_t sign = signbit(x) ? 0x8000u : 0u;
    const double a = fabs(x);
    if (a != a) return (uint16_t)(sign | 0x7E00u);                 /* quiet NaN */
    if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u);           /* rounds past the largest half */
    if (a < 0x1p-14) {                                             /* subnormal: units of 2^-24 */
        /* 1024 units round up to the least normal, whose bits are 0x0400 too */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    }
    int e = ilogb(a);                                              /* a in [2^e, 2^(e+1)) */
    double m = nearbyint(ldexp(a, 10 - e));                        /* 11 significant bits */
    if (m >= 2048.0) { m = 1024.0; e++; }
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024.0));
}

static inline double oar_half_to_double(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double v;
    if (e == 0) v = ldexp((double)f, -24);
    else if (e == 31) v = f ? NAN : INFINITY;
    else v = ldexp((double)(1024 + f), e - 25);
    return (h & 0x8000u) ? -v : v;
}
#endif
