/*
 * fuzz_launch_env.c - libFuzzer target for the launcher environment parser
 * (src/boot/launch_env.c: hccl_launch_env_read). The input is a list of
 * NAME=value lines; the parser sees them through its getenv hook. Any environment
 * must give either a consistent result (rank < size, a root address) or an error
 * message.
 */
#include "boot/launch_env.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARS 64

static char *g_names[MAX_VARS], *g_values[MAX_VARS];
static int g_n;

static const char *fake_getenv(const char *name)
{
    for (int i = g_n - 1; i >= 0; i--)
        if (strcmp(g_names[i], name) == 0) return g_values[i];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    g_n = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && g_n < MAX_VARS;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        g_names[g_n] = line;
        g_values[g_n] = eq + 1;
        g_n++;
    }
    hccl_launch_env env;
    char err[512];
    err[0] = 0;
    memset(&env, 0, sizeof env);
    HcclResult res = hccl_launch_env_read(&env, fake_getenv, err, sizeof err);
    if (res == HCCL_SUCCESS) {
        if (env.nranks == 0 || env.rank >= env.nranks) __builtin_trap();
        if (strnlen(env.root_addr, sizeof env.root_addr) == sizeof env.root_addr) __builtin_trap();
        if (!env.source) __builtin_trap();
    } else if (err[0] == 0) {
        __builtin_trap();
    }
    g_n = 0;
    free(text);
    return 0;
}
