/* nftw */
#define _XOPEN_SOURCE 700
#include "fuzz_util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

const char *adm_fuzz_dir(void)
{
    if (!dir[0]) {
        const char *base = getenv("ADM_FUZZ_TMP");
        if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/admit-fuzz.XXXXXX", base);
        if (!mkdtemp(dir)) {
            perror("admit fuzz: mkdtemp");
            abort();
        }
    }
    return dir;
}

const char *adm_fuzz_put(const char *name, const uint8_t *data, size_t size)
{
    static char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", adm_fuzz_dir(), name);
    if (!(f = fopen(path, "wb"))) return NULL;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return NULL;
    }
    fclose(f);
    return path;
}

/* The bundled captures (captures/make_bundled.sh) at 8 tokens and 32
 * channels: the same names, ops and parameters. */
static const struct {
    const char *file, *op, *params;
    int nvfp4;
} small[] = {
    {"flux_fc1_gelu_small.h5", "linear+gelu", "{\"approximate\":\"tanh\"}", 0},
    {"flux_fc1_linear_small.h5", "linear", "{}", 0},
    {"wan_nvfp4_ff.h5", "linear+gelu", "{\"approximate\":\"tanh\"}", 1},
    {"dit_gated_residual.h5", "gated_residual", "{}", 0},
    {"dit_rmsnorm.h5", "rmsnorm", "{\"eps\":1e-6}", 0},
    {"dit_adaln_layernorm.h5", "layernorm", "{\"eps\":1e-6,\"modulate\":true}", 0},
    {"vae_groupnorm_silu.h5", "groupnorm", "{\"groups\":32,\"silu\":true,\"channels_last\":true,\"eps\":1e-6}", 0},
    {"vae_rmsnorm_silu.h5", "rmsnorm", "{\"eps\":1e-6,\"silu\":true}", 0},
    {"sana_linear_attention.h5", "linear_attention", "{\"eps\":1e-6}", 0},
};

void adm_fuzz_make_small_captures(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/captures", adm_fuzz_dir());
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/captures/data", adm_fuzz_dir());
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/fusions", adm_fuzz_dir());
    mkdir(path, 0700);
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        char out[512];
        char *argv[] = {"admit-kernel", "capture", "synth", "-o", out, "--op", (char *)small[i].op,
                        "--params", (char *)small[i].params, "--tokens", "8", "--channels", "32",
                        "--out-features", "16", "--gzip", "0", "--with-outputs",
                        small[i].nvfp4 ? "--nvfp4-grid" : NULL, NULL};
        int argc = small[i].nvfp4 ? 19 : 18;
        snprintf(out, sizeof out, "%s/captures/data/%s", adm_fuzz_dir(), small[i].file);
        if (access(out, R_OK) == 0) continue;
        if (adm_cli_main(argc, argv) != 0) {
            fprintf(stderr, "admit fuzz: cannot make %s\n", out);
            abort();
        }
    }
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void adm_fuzz_cleanup(void)
{
    if (dir[0]) nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    dir[0] = '\0';
}
