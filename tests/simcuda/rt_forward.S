/* rt_forward.S: the runtime entry points that only forward to the engine (rt_forward.inc). Each is
 * a tail jump through a slot that holds the engine's function, so it needs no prototype and keeps
 * every argument register and the stack as the caller left them. An empty slot is filled on the
 * first call by sr_forward_resolve (rt_init.c), which finds the engine through the driver. */
#if defined(__x86_64__)
        .text
        .hidden sr_forward_resolve

/* The shared slow path: %rax = the name, %r11 = the slot. Saves the argument registers (integer
 * and vector), asks for the function, restores them and jumps. */
        .p2align 4
        .type   sr_forward_slow, @function
sr_forward_slow:
        pushq   %rdi
        pushq   %rsi
        pushq   %rdx
        pushq   %rcx
        pushq   %r8
        pushq   %r9
        subq    $136, %rsp
        movdqu  %xmm0, 0(%rsp)
        movdqu  %xmm1, 16(%rsp)
        movdqu  %xmm2, 32(%rsp)
        movdqu  %xmm3, 48(%rsp)
        movdqu  %xmm4, 64(%rsp)
        movdqu  %xmm5, 80(%rsp)
        movdqu  %xmm6, 96(%rsp)
        movdqu  %xmm7, 112(%rsp)
        movq    %rax, %rdi
        movq    %r11, %rsi
        call    sr_forward_resolve
        movq    %rax, %r11
        movdqu  0(%rsp), %xmm0
        movdqu  16(%rsp), %xmm1
        movdqu  32(%rsp), %xmm2
        movdqu  48(%rsp), %xmm3
        movdqu  64(%rsp), %xmm4
        movdqu  80(%rsp), %xmm5
        movdqu  96(%rsp), %xmm6
        movdqu  112(%rsp), %xmm7
        addq    $136, %rsp
        popq    %r9
        popq    %r8
        popq    %rcx
        popq    %rdx
        popq    %rsi
        popq    %rdi
        jmpq    *%r11
        .size   sr_forward_slow, .-sr_forward_slow

#define SR_FORWARD(name)                                   \
        .section .bss.sr_slot_##name, "aw", @nobits;       \
        .p2align 3;                                        \
sr_slot_##name: .zero 8;                                   \
        .section .rodata.sr_name_##name, "a", @progbits;   \
sr_name_##name: .asciz #name;                              \
        .text;                                             \
        .p2align 4;                                        \
        .globl name;                                       \
        .type name, @function;                             \
name:   endbr64;                                           \
        movq sr_slot_##name(%rip), %rax;                   \
        testq %rax, %rax;                                  \
        jz 1f;                                             \
        jmpq *%rax;                                        \
1:      leaq sr_name_##name(%rip), %rax;                   \
        leaq sr_slot_##name(%rip), %r11;                   \
        jmp sr_forward_slow;                               \
        .size name, .-name;

#include "rt_forward.inc"

#else
#error "simcuda's runtime forwarders are written for x86-64"
#endif
        .section .note.GNU-stack, "", @progbits
