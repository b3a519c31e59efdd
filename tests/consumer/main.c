/* A C program outside admit that links the installed libadmit. */
#include <adm_core.h>
#include <stdio.h>

int main(void)
{
    uint64_t b;
    if (adm_format_encode(ADM_BF16, 1.0 + 0x1p-8, ADM_RNE, 0, &b) != ADM_OK || b != 0x3f80) return 1;
    printf("consumer: bf16(1+2^-8) = 0x%04llx\n", (unsigned long long)b);
    return 0;
}
