/* rng.c — xoshiro256** (Blackman & Vigna) seeded through splitmix64. One
 * global generator serves ops without a `seed` attr; its four words are the
 * whole state, so saving and restoring them replays a run exactly. The global
 * generator is not locked: ops draw from it on the executor's thread. */
#include "op.h"

#include <math.h>

static uint64_t g_seed;
static oar_rng_t g_rng;
static bool g_seeded;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void oar_rng_seed(oar_rng_t *r, uint64_t seed)
{
    if (!r) return;
    uint64_t x = seed;
    /* splitmix64 outputs are a bijection of distinct counters, so four
     * consecutive ones are never all zero */
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t oar_rng_next_r(oar_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double oar_rng_uniform_r(oar_rng_t *r)
{
    /* the top 53 bits fill a double's mantissa exactly: [0, 1) */
    return (double)(oar_rng_next_r(r) >> 11) * 0x1.0p-53;
}

double oar_rng_normal_r(oar_rng_t *r)
{
    /* Box-Muller; no spare is cached so the state stays the four words */
    double u1 = 1.0 - oar_rng_uniform_r(r);   /* (0, 1]: log is finite */
    double u2 = oar_rng_uniform_r(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

static oar_rng_t *global(void)
{
    if (!g_seeded) {
        oar_rng_seed(&g_rng, g_seed);
        g_seeded = true;
    }
    return &g_rng;
}

uint64_t oar_rng_next(void) { return oar_rng_next_r(global()); }
double oar_rng_uniform(void) { return oar_rng_uniform_r(global()); }
double oar_rng_normal(void) { return oar_rng_normal_r(global()); }

uint64_t oar_random_seed(void) { return g_seed; }

void oar_set_random_seed(uint64_t seed)
{
    g_seed = seed;
    oar_rng_seed(&g_rng, seed);
    g_seeded = true;
}

int oar_rng_get_state(uint64_t state[4])
{
    if (!state) return oar_error(OAR_ERR_INVALID, "oar_rng_get_state: NULL state");
    const oar_rng_t *r = global();
    for (int i = 0; i < 4; i++) state[i] = r->s[i];
    return OAR_OK;
}

int oar_rng_set_state(const uint64_t state[4])
{
    if (!state) return oar_error(OAR_ERR_INVALID, "oar_rng_set_state: NULL state");
    if ((state[0] | state[1] | state[2] | state[3]) == 0)
        return oar_error(OAR_ERR_INVALID, "random generator state is all zeros (xoshiro256** would only return zeros)");
    for (int i = 0; i < 4; i++) g_rng.s[i] = state[i];
    g_seeded = true;
    return OAR_OK;
}
