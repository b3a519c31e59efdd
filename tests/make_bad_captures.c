/* Writes the malformed captures into DIR and lists, one per line,
 * "file<TAB>needle1<TAB>needle2" for the CLI test to check. */
#include "bad_captures.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_bad_captures DIR\n");
        return 2;
    }
    if (adm_make_bad_captures(argv[1]) != ADM_OK) {
        fprintf(stderr, "make_bad_captures: %s\n", adm_error_message());
        return 2;
    }
    for (int i = 0; i < adm_bad_case_count; i++)
        printf("%s\t%s\t%s\n", adm_bad_cases[i].file, adm_bad_cases[i].needle1, adm_bad_cases[i].needle2);
    return 0;
}
