# tests/e2e/safety.cmake: pinguard must never be the cause of a crash, a hang or corrupted data
# (README.md, "Safe on real hosts"). Each program checks that it survived; safe_run.sh checks
# its exit status and output, whatever pinguard reported. The cases are declared in the
# programs (SAFE: lines, README.md in this folder); this file builds the programs.
set(SAFE_RUN ${CMAKE_CURRENT_SOURCE_DIR}/safe_run.sh)

# pg_safe_case(test-name program [OPTIONS pinguard-options] [ENV k=v...] [CHECK safe_run args...]
#              [ARGS program args...])  (a SAFE: declaration)
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

foreach(p safe_signal_reentry safe_min_stack safe_small_stack_report safe_flag_wait
          safe_cow_decision safe_hugetlb safe_map_budget safe_stream_memops safe_private_dma
          safe_private_fork)
  pg_e2e_program(${p})
endforeach()
foreach(p safe_signal_reentry safe_min_stack safe_small_stack_report)
  target_link_libraries(e2e_${p} PRIVATE Threads::Threads)
endforeach()
target_link_libraries(e2e_safe_stream_memops PRIVATE simcuda_driver)
add_executable(e2e_safe_no_driver safe_no_driver.c)
target_link_libraries(e2e_safe_no_driver PRIVATE ${CMAKE_DL_LIBS})

# pinguard's static TLS (every thread's, CUDA or not) stays under 1 KiB, so a program that never
# uses CUDA, with a PTHREAD_STACK_MIN thread using most of its stack, runs the same with the
# preload as without (safe_min_stack.c). A check of the library, no program's: it stays here.
add_test(NAME e2e.safe.static_tls
         COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:pinguard> -DLIMIT=1024
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check_tls.cmake)
