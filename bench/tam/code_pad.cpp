// SPDX-License-Identifier: MIT
// TAM_TABLE_CODE_PAD bytes of code placed before everything else tam_table_layout<k> links:
// the layer's and the programs' code then sits that much further from the shared libraries'
// (libc, libstdc++), so it falls on other sets of the simulated 8 KiB instruction cache.
// tam_table runs its repetitions on these binaries in turn (table.cpp, `layouts`).
#ifndef TAM_TABLE_CODE_PAD
#error "TAM_TABLE_CODE_PAD (bytes) must be defined"
#endif

#define TAM_TABLE_STR2(x) #x
#define TAM_TABLE_STR(x) TAM_TABLE_STR2(x)

// Never executed: nops filling the first bytes of this binary's own .text.
asm(".text\n"
    ".globl tam_table_code_pad\n"
    "tam_table_code_pad:\n"
    ".skip " TAM_TABLE_STR(TAM_TABLE_CODE_PAD) ", 0x90\n");
