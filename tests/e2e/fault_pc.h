/* fault_pc.h: two adjacent functions for the exact-pc tests (issue 9, defect 5). The load in
 * fault_first_byte_load is that function's first instruction, and the byte before it is the last
 * byte of fault_neighbour_before: symbolizing the faulting pc as a return address (pc - 1) names
 * the neighbour. Both are local symbols (only the symbol table names them, as a static function),
 * with unwind info so that a backtrace continues into the caller. */
#ifndef PG_FAULT_PC_H
#define PG_FAULT_PC_H

__asm__(".text\n"
        ".p2align 4\n"
        ".type fault_neighbour_before, @function\n"
        "fault_neighbour_before:\n"
        ".cfi_startproc\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size fault_neighbour_before, .-fault_neighbour_before\n"
        ".type fault_first_byte_load, @function\n"
        "fault_first_byte_load:\n" /* no alignment in between: the functions touch */
        ".cfi_startproc\n"
        "  movzbl (%rdi), %eax\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size fault_first_byte_load, .-fault_first_byte_load\n");

void fault_neighbour_before(void);
/* Returns the byte at p; the load is the function's first instruction. */
unsigned fault_first_byte_load(const volatile void *p);

#endif /* PG_FAULT_PC_H */
