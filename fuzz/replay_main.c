/* Runs a fuzz target's LLVMFuzzerTestOneInput over files (each argument a
 * file or a folder of files), without libFuzzer: the regression run of the
 * findings and seeds in every build (ctest fuzz_regress_*), with whatever
 * compiler and sanitizers the build uses. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void adm_fuzz_cleanup(void);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;
    if (!f) { perror(path); return 1; }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "%s: cannot read\n", path);
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    fprintf(stderr, "replay %s (%ld bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int bad = 0, runs = 0;
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            struct dirent **list;
            int n = scandir(argv[i], &list, NULL, alphasort);
            for (int k = 0; k < n; k++) {
                char p[4096];
                if (list[k]->d_name[0] != '.') {
                    snprintf(p, sizeof p, "%s/%s", argv[i], list[k]->d_name);
                    bad += run_file(p);
                    runs++;
                }
                free(list[k]);
            }
            free(list);
        } else {
            bad += run_file(argv[i]);
            runs++;
        }
    }
    adm_fuzz_cleanup();
    fprintf(stderr, "replayed %d inputs\n", runs);
    return bad ? 2 : 0;
}
