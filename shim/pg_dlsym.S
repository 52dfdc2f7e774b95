/* pg_dlsym.S: pinguard's dlsym, which must stay invisible to every lookup but one kind.
 *
 * Clients that reach the driver without the runtime (cuda-python, Triton, CuPy, static runtimes)
 * get its entry points with dlsym on their own handle of libcuda.so.1. pinguard looks only at
 * names of the driver's shape, "cu" and a capital letter (cuGetProcAddress_v2, cuLaunchKernelEx):
 * those go to pg_dlsym_driver (pg_lookup.c), with the caller's return address.
 *
 * Every other lookup jumps straight into the real dlsym, with the caller's registers and its
 * return address still on the stack. That is what keeps dlsym(RTLD_NEXT, ...) right: glibc
 * finds "next" from the address its dlsym returns to, which must be the caller's, not a C
 * wrapper's in libpinguard.so (the bug interposed dlsyms are known for).
 *
 * x86-64 only: on other machines pinguard does not define dlsym (docs/DESIGN.md). */
#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        testq   %rsi, %rsi
        jz      .Lplain
        cmpb    $'c', (%rsi)
        jne     .Lplain
        cmpb    $'u', 1(%rsi)
        jne     .Lplain
        movzbl  2(%rsi), %eax
        subl    $'A', %eax
        cmpl    $25, %eax
        ja      .Lplain
        movq    (%rsp), %rdx            /* the caller's return address */
        jmp     pg_dlsym_driver         /* returns to the caller itself */
.Lplain:
        movq    pg_real_dlsym(%rip), %rax
        testq   %rax, %rax
        jz      .Lresolve
        jmp     *%rax
.Lresolve:                              /* first use: find the real dlsym, then go there */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                /* 16-byte alignment for the call */
        .cfi_adjust_cfa_offset 8
        call    pg_dlsym_resolve
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        jz      .Lnone
        jmp     *%rax
.Lnone:
        ret
        .cfi_endproc
        .size   dlsym, .-dlsym
#endif
        .section .note.GNU-stack, "", @progbits
