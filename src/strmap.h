/* strmap.h — open-addressing map from string to int (index), used by scopes
 * and blocks for name lookup. Keys are borrowed: the owner keeps them alive. */
#ifndef OAR_STRMAP_H
#define OAR_STRMAP_H
#include <stdint.h>

typedef struct oar_strmap {
    const char **keys; int *vals; int cap, n;   /* cap is 0 or a power of two */
} oar_strmap_t;

int oar_strmap_put(oar_strmap_t *m, const char *key, int val); /* status */
int oar_strmap_get(const oar_strmap_t *m, const char *key);     /* -1 if absent */
void oar_strmap_del(oar_strmap_t *m, const char *key);
void oar_strmap_clear(oar_strmap_t *m);
void oar_strmap_free(oar_strmap_t *m);
uint64_t oar_str_hash(const char *s);
#endif
