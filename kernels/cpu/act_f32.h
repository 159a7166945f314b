/*
 * act_f32.h — branch-free float32 activations shared by the recurrent
 * kernels (sequence_batch.c's oar_act_* and the fused step loops of lstm.c
 * and gru.c): scalar and 8-lane (GCC/Clang vector extension) forms.
 */
#ifndef OAR_KERNELS_CPU_ACT_F32_H
#define OAR_KERNELS_CPU_ACT_F32_H
#include <stdint.h>
#include <string.h>
#include "sequence_batch.h"

/* float32: exp by Cody-Waite range reduction (x = n ln2 + r, |r| <= ln2/2),
 * a degree-6 polynomial for e^r and 2^n built in the exponent bits; about
 * 1 ulp, and branch-free so the loops vectorize (libm's expf/tanhf calls do
 * not). Inputs are clamped to where e^x is a normal float. */
static inline float exp_f32(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = x * 1.44269504088896341f;
    n = (n + 12582912.0f) - 12582912.0f;                  /* round to nearest */
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;  /* ln2 split in two */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union { int32_t i; float f; } scale = {.i = ((int32_t)n + 127) << 23};
    return p * scale.f;
}

static inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

/* small |x|: odd polynomial (no cancellation); else 1 - 2 / (e^{2|x|} + 1) */
static inline float tanh_f32(float x)
{
    float a = x < 0 ? -x : x, z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                    + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float big = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
    big = x < 0 ? -big : big;
    return a < 0.625f ? small : big;
}

/* The same on 8 lanes with GCC/Clang vector extensions: the compilers do not
 * if-convert the float compares of the scalar code under the default
 * -ftrapping-math, so the plain loops would stay scalar. */
typedef float v8f_t __attribute__((vector_size(32)));
typedef int32_t v8i_t __attribute__((vector_size(32)));

static inline v8f_t sel8(v8i_t m, v8f_t a, v8f_t b) { return (v8f_t)((m & (v8i_t)a) | (~m & (v8i_t)b)); }

static inline v8f_t exp8(v8f_t x)
{
    v8f_t zero = x - x;
    x = sel8(x < -87.0f, zero - 87.0f, x);
    x = sel8(x > 88.0f, zero + 88.0f, x);
    v8f_t n = x * 1.44269504088896341f;
    n = (n + 12582912.0f) - 12582912.0f;
    v8f_t r = x - n * 0.693359375f + n * 2.12194440e-4f;
    v8f_t p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    v8i_t e = (__builtin_convertvector(n, v8i_t) + 127) << 23;
    return p * (v8f_t)e;
}

static inline v8f_t tanh8(v8f_t x)
{
    v8f_t zero = x - x;
    v8i_t neg = x < zero;
    v8f_t a = sel8(neg, -x, x), z = x * x;
    v8f_t small = ((((z * -5.70498872745e-3f + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                    + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    v8f_t big = 1.0f - 2.0f / (exp8(2.0f * a) + 1.0f);
    big = sel8(neg, -big, big);
    return sel8(a < 0.625f, small, big);
}

/* lane loads/stores of m <= 8 floats (m == 8 compiles to one vector move) */
static inline v8f_t ld8(const float *p, int m)
{
    v8f_t v = {0};
    memcpy(&v, p, sizeof(float) * (size_t)m);
    return v;
}
static inline void st8(float *p, v8f_t v, int m) { memcpy(p, &v, sizeof(float) * (size_t)m); }

/* act(x) and g * act'(.) from the output y, on 8 lanes */
static inline v8f_t act8(int act, v8f_t x)
{
    switch (act) {
    case OAR_ACT_SIGMOID: return 1.0f / (1.0f + exp8(-x));
    case OAR_ACT_TANH: return tanh8(x);
    case OAR_ACT_RELU: { v8f_t z = x - x; return sel8(x > z, x, z); }
    default: return x;
    }
}
static inline v8f_t act8_bwd(int act, v8f_t y, v8f_t g)
{
    switch (act) {
    case OAR_ACT_SIGMOID: return g * (y * (1.0f - y));
    case OAR_ACT_TANH: return g * (1.0f - y * y);
    case OAR_ACT_RELU: { v8f_t z = y - y; return sel8(y > z, g, z); }
    default: return g;
    }
}
#endif
