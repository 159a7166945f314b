/* strmap.c — string -> int map with open addressing and linear probing.
 * Deletion shifts later entries of the probe run back (no tombstones), so
 * lookups never slow down after many erases. */
#include "strmap.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

uint64_t oar_str_hash(const char *s)
{
    /* FNV-1a, 64 bit */
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h;
}

static size_t slot_of(const oar_strmap_t *m, const char *key)
{
    return (size_t)(oar_str_hash(key) & (uint64_t)(m->cap - 1));
}

/* index of key's slot, or of the empty slot where it would go */
static size_t find_slot(const oar_strmap_t *m, const char *key)
{
    size_t mask = (size_t)m->cap - 1, i = slot_of(m, key);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & mask;
    return i;
}

static int rehash(oar_strmap_t *m, int newcap)
{
    const char **keys = oar_xcalloc((size_t)newcap, sizeof *keys);
    int *vals = oar_xcalloc((size_t)newcap, sizeof *vals);
    if (!keys || !vals) { free(keys); free(vals); return OAR_ERR_NOMEM; }
    oar_strmap_t nm = { keys, vals, newcap, 0 };
    for (int i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = find_slot(&nm, m->keys[i]);
        nm.keys[j] = m->keys[i];
        nm.vals[j] = m->vals[i];
        nm.n++;
    }
    free(m->keys);
    free(m->vals);
    *m = nm;
    return OAR_OK;
}

int oar_strmap_put(oar_strmap_t *m, const char *key, int val)
{
    if (!m || !key) return oar_error(OAR_ERR_INVALID, "oar_strmap_put: NULL %s", m ? "key" : "map");
    /* keep the load factor at or below 70% */
    if ((int64_t)(m->n + 1) * 10 > (int64_t)m->cap * 7) {
        if (m->cap > (1 << 29)) return oar_error(OAR_ERR_NOMEM, "string map too large (%d entries)", m->n);
        OAR_TRY(rehash(m, m->cap ? m->cap * 2 : 16));
    }
    size_t i = find_slot(m, key);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;   /* also refreshes the borrowed pointer of an existing key */
    m->vals[i] = val;
    return OAR_OK;
}

int oar_strmap_get(const oar_strmap_t *m, const char *key)
{
    if (!m || !key || m->cap == 0) return -1;
    size_t i = find_slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

void oar_strmap_del(oar_strmap_t *m, const char *key)
{
    if (!m || !key || m->cap == 0) return;
    size_t mask = (size_t)m->cap - 1, i = find_slot(m, key);
    if (!m->keys[i]) return;
    m->keys[i] = NULL;
    m->n--;
    /* backward shift: move up entries whose home lies cyclically at or before the hole */
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m, m->keys[j]);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->keys[j] = NULL;
            i = j;
        }
    }
}

void oar_strmap_clear(oar_strmap_t *m)
{
    if (!m || m->cap == 0) return;
    memset(m->keys, 0, (size_t)m->cap * sizeof *m->keys);
    m->n = 0;
}

void oar_strmap_free(oar_strmap_t *m)
{
    if (!m) return;
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}
