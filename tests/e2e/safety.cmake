# tests/e2e/safety.cmake: pinguard must never be the cause of a crash, a hang or corrupted data
# (README.md, "Safe on real hosts"). Each program checks that it survived; safe_run.sh checks
# its exit status and output, whatever pinguard reported.
set(SAFE_RUN ${CMAKE_CURRENT_SOURCE_DIR}/safe_run.sh)

# pg_safe_case(test-name program [OPTIONS pinguard-options] [ENV k=v...] [CHECK safe_run args...]
#              [ARGS program args...])
function(pg_safe_case test prog)
  cmake_parse_arguments(C "" "OPTIONS" "ENV;CHECK;ARGS" ${ARGN})
  if(NOT DEFINED C_OPTIONS)
    set(C_OPTIONS "mode=audit")
  endif()
  add_test(NAME e2e.safe.${test}
           COMMAND ${SAFE_RUN} ${C_CHECK} -- $<TARGET_FILE:e2e_${prog}> ${C_ARGS})
  set_tests_properties(e2e.safe.${test} PROPERTIES TIMEOUT 120
    ENVIRONMENT "${PG_TEST_ENV};PG_OPTIONS=${C_OPTIONS};${C_ENV}")
endfunction()

# A program's SIGUSR1 handler reads a guarded buffer while its thread is inside pinguard's guard
# bookkeeping: no hang (the program's alarm kills a hung run), in both modes. Not under
# ThreadSanitizer, which holds a program's asynchronous signals back and runs their handlers
# itself on leaving an intercepted call (here pinguard's pthread_mutex_unlock of a guard stripe):
# the guard fault that handler takes never reaches pinguard's SIGSEGV handler, and the process
# dies of it (seen under gdb in CI's TSAN build; the normal and ASAN+UBSAN builds pass).
pg_e2e_program(safe_signal_reentry)
target_link_libraries(e2e_safe_signal_reentry PRIVATE Threads::Threads)
if(NOT PG_SANITIZE STREQUAL "thread")
  foreach(mode audit enforce)
    pg_safe_case(signal_reentry.${mode} safe_signal_reentry
                 OPTIONS "mode=${mode}:guard=1:guard_min_bytes=4096:exitcode=0"
                 ENV SIMCUDA_LATENCY_US=200 CHECK --stdout "^done" ARGS 3000)
  endforeach()
endif()

# pinguard's static TLS (every thread's, CUDA or not) stays under 1 KiB...
add_test(NAME e2e.safe.static_tls
         COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:pinguard> -DLIMIT=1024
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_tls.cmake)
# ...so a program that never uses CUDA, with a PTHREAD_STACK_MIN thread using most of its stack,
# runs the same with the preload as without.
pg_e2e_program(safe_min_stack)
target_link_libraries(e2e_safe_min_stack PRIVATE Threads::Threads)
pg_safe_case(min_stack.bare safe_min_stack CHECK --no-preload --stdout "^thread used")
pg_safe_case(min_stack.preload safe_min_stack CHECK --stdout "^thread used")

# A guard fault reported (audit) or waited for (enforce) on a thread with a 32 KiB stack, 18 KiB
# of it in use when it faults (the old in-place handler needed more than the rest): the
# report is formatted on pinguard's own stack, and the thread survives.
pg_e2e_program(safe_small_stack_report)
target_link_libraries(e2e_safe_small_stack_report PRIVATE Threads::Threads)
foreach(mode audit enforce)
  pg_safe_case(small_stack_report.${mode} safe_small_stack_report
               OPTIONS "mode=${mode}:guard=1:guard_min_bytes=4096:exitcode=0:dedup=0"
               CHECK --stdout "^worker done" --stderr "cpu-read-during-device-write" ARGS 32768 18)
endforeach()

# No driver in the process: dlsym answers NULL for cu* names, as without pinguard, and calls of
# pinguard's driver wrappers print one warning in all (safe_no_driver.c). Again with simcuda's
# driver loaded RTLD_LOCAL.
add_executable(e2e_safe_no_driver safe_no_driver.c)
target_link_libraries(e2e_safe_no_driver PRIVATE ${CMAKE_DL_LIBS})
pg_safe_case(no_driver safe_no_driver
             CHECK --stdout "^no driver seen" --count "pinguard: WARNING" 1)
pg_safe_case(no_driver.local safe_no_driver
             CHECK --stdout "^no driver seen" ARGS $<TARGET_FILE:simcuda_driver>)
pg_safe_case(no_driver.bare safe_no_driver CHECK --no-preload --stdout "^no driver seen")

# Bounded waits: a kernel spins on a flag in a guarded 1 MiB buffer until the CPU sets it.
# Enforce waits max_wait_ms (here 300), reports wait-timeout (a violation it could not prevent:
# exit status 23) and lets the store go; the kernel then finishes. Audit reports the store.
pg_e2e_program(safe_flag_wait)
pg_e2e_case(safe.flag_wait.enforce safe_flag_wait MODE enforce EXPECT wait-timeout EXIT 23
            STDOUT "^kernel finished" STDERR "waited 3[0-9][0-9]"
            ENV "PG_EXTRA_OPTIONS=guard=1:max_wait_ms=300")
pg_e2e_case(safe.flag_wait.audit safe_flag_wait MODE audit
            EXPECT cpu-write-during-device-access STDOUT "^kernel finished"
            ENV "PG_EXTRA_OPTIONS=guard=1")

# The guard decision per range: with a faked affected kernel, registered private memory is not
# guarded (one warning), MAP_SHARED memory is; on this kernel both are.
pg_e2e_program(safe_cow_decision)
pg_safe_case(cow_decision.affected safe_cow_decision
             OPTIONS "mode=audit:guard=1:exitcode=0:kernel_release=5.15.0-91-generic"
             CHECK --stdout "after the sync 0x5a 0x5a" --count "ERROR: cpu-read-during-device-write" 1
                   --stderr "in read_shared" --no-stderr "in read_private"
                   --stderr "Linux 5.15.0-91-generic: cudaHostRegister'ed private memory")
pg_safe_case(cow_decision.fixed_kernel safe_cow_decision
             OPTIONS "mode=audit:guard=1:exitcode=0:kernel_release=6.8.0"
             CHECK --stdout "after the sync 0x5a 0x5a" --count "ERROR: cpu-read-during-device-write" 2
                   --no-stderr "private memory")

# hugetlb: never guarded (one warning), never an EINVAL, and guarding of other private memory
# goes on (safe_hugetlb.c). Skipped where no huge page can be mapped (as root: vm.nr_hugepages).
pg_e2e_program(safe_hugetlb)
pg_safe_case(hugetlb safe_hugetlb OPTIONS "mode=audit:guard=1:exitcode=0"
             CHECK --stdout "after the syncs 0x5a 0x5a" --stderr "hugetlb memory is not guarded"
                   --no-stderr "mprotect fails|Invalid argument|in read_huge"
                   --count "ERROR: cpu-read-during-device-write" 1)
set_tests_properties(e2e.safe.hugetlb PROPERTIES SKIP_RETURN_CODE 77)

# The mapping budget: with guard_map_budget=40, a burst of 200 guarded sub-range copies adds at
# most 40 mappings (guard_map_budget counts from when guards started; up to 4 more are the
# stream's worker thread, started by the first copy), 180 guards or more are
# skipped and counted, one warning says so, and the program's own mmap calls succeed.
# Inside the buffer only guards split mappings, so that count is held to the budget in every
# build. A sanitizer's allocator maps memory of its own while the burst runs, between two of
# pinguard's counts (ASAN: about 49, TSAN: about 60), so there the process-wide count is not held.
set(map_budget_burst "([0-9]|[1-3][0-9]|4[0-4])")
if(PG_SANITIZE)
  set(map_budget_burst "[0-9]+")
endif()
pg_e2e_program(safe_map_budget)
pg_safe_case(map_budget safe_map_budget
             OPTIONS "mode=audit:guard=1:guard_min_bytes=4096:guard_map_budget=40:print_stats=1"
             ENV SIMCUDA_LATENCY_US=200000
             CHECK --stdout "mappings added by the burst: ${map_budget_burst}$"
                   --stdout "mappings added inside the buffer: ([1-9]|[1-3][0-9]|40)$"
                   --stdout "own mmaps: 100 of 100"
                   --stderr "guard_skipped_maps: 1[89][0-9] " --count "reached the mapping budget" 1)

# Stream memory operations: their flag words are never guarded (safe_stream_memops.c). "wait":
# the CPU's store that releases a cuStreamWaitValue32 goes through, in both modes, with no report;
# "counter": a DeepEP-shaped loop (a kernel, then cuStreamWriteValue32 bumping a counter the CPU
# polls, then the CPU reads the data): no false positive.
pg_e2e_program(safe_stream_memops)
target_link_libraries(e2e_safe_stream_memops PRIVATE simcuda_driver)
foreach(mode audit enforce)
  pg_e2e_case(safe.stream_memops.wait.${mode} safe_stream_memops MODE ${mode} EXPECT none
              STDOUT "^copy ran after the flag" ARGS wait
              ENV "PG_EXTRA_OPTIONS=guard=1" SIMCUDA_WAIT_VALUE_MAX_S=20)
  pg_e2e_case(safe.stream_memops.counter.${mode} safe_stream_memops MODE ${mode} EXPECT none
              STDOUT "^counter loop done" ARGS counter ENV "PG_EXTRA_OPTIONS=guard=1")
endforeach()

# Registered private memory as the driver leaves it (private anonymous; simcuda reaches it
# through io_uring pins): a CPU read during a device-to-host copy into it is reported by its guard
# fault on a fixed kernel; on an affected one it is not guarded, and a write(2) of it during a
# copy is still reported by the system-call check. On both the copies land in the pages the CPU
# reads after the guard round trips (safe_private_dma.c).
pg_e2e_program(safe_private_dma)
pg_safe_case(private_dma.fixed_kernel safe_private_dma
             OPTIONS "mode=audit:guard=1:exitcode=0:kernel_release=6.8.0"
             CHECK --stdout "mapping private anonymous, data arrived in the user's pages"
                   --count "ERROR: cpu-read-during-device-write" 1
                   --stderr "syscall-read-during-device-write" --no-stderr "private memory")
pg_safe_case(private_dma.affected safe_private_dma
             OPTIONS "mode=audit:guard=1:exitcode=0:kernel_release=5.15.0-91-generic"
             CHECK --stdout "mapping private anonymous, data arrived in the user's pages"
                   --count "cudaHostRegister'ed private memory" 1
                   --stderr "syscall-read-during-device-write"
                   --no-stderr "cpu-read-during-device-write")
# Fork while a registered private buffer is guarded and in flight: the children read and store
# into their own copies without a report, the parent's pages stay its own and the copies land
# there (safe_private_fork.c).
pg_e2e_program(safe_private_fork)
foreach(mode audit enforce)
  pg_safe_case(private_fork.${mode} safe_private_fork
               OPTIONS "mode=${mode}:guard=1:exitcode=0:kernel_release=6.8.0"
               CHECK --stdout "read and wrote their own copies, parent.s pages its own, later copy landed"
                     --no-stderr "ERROR")
endforeach()
