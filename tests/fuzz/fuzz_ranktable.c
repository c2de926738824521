/*
 * fuzz_ranktable.c - libFuzzer target for the rank-table parser
 * (src/boot/ranktable.c: hccl_ranktable_parse). Any text must either parse into a
 * consistent table or be rejected with a message; never crash, leak or overrun.
 */
#include "boot/ranktable.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    hccl_ranktable rt;
    char err[512];
    err[0] = 0;
    memset(&rt, 0, sizeof rt);
    HcclResult res = hccl_ranktable_parse(text, &rt, err, sizeof err);
    if (res == HCCL_SUCCESS) {
        /* A table that parsed is consistent: ranks 0..n-1, each once, strings terminated. */
        if (rt.nranks == 0 || !rt.ranks) __builtin_trap();
        for (uint32_t r = 0; r < rt.nranks; r++) {
            if (rt.ranks[r].rank_id != r) __builtin_trap();
            if (strnlen(rt.ranks[r].server_id, sizeof rt.ranks[r].server_id) == sizeof rt.ranks[r].server_id)
                __builtin_trap();
            if (rt.ranks[r].server_index >= rt.nservers) __builtin_trap();
        }
        hccl_ranktable_free(&rt);
    } else if (err[0] == 0) {
        __builtin_trap(); /* a rejection must say why */
    }
    free(text);
    return 0;
}
