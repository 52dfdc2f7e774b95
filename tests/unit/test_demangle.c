/* test_demangle.c: pinguard's own demangler gives c++filt's text (less a template function's
 * return type) for the names stacks hold, the incident's torch frames included, and refuses
 * what it does not understand instead of printing something wrong. The comparison with c++filt
 * over a whole library is unit.policy.demangle_vs_cxxfilt. */
#include <criterion/criterion.h>
#include <string.h>

#include "pg_demangle.h"

static void same(const char *mangled, const char *want) {
  char out[1024];
  cr_assert(pg_demangle(mangled, out, sizeof out), "not demangled: %s", mangled);
  cr_assert_str_eq(out, want, "%s", mangled);
}

Test(demangle, torch_frames_of_the_incident) {
  same("_ZL17doPartialPythonIOP7_objectPvmb",
       "doPartialPythonIO(_object*, void*, unsigned long, bool)");
  same("_ZN2at4cuda12_GLOBAL__N_128CUDACachingHostAllocatorImpl29allocate_host_memory_slowpathEmPPv",
       "at::cuda::(anonymous namespace)::CUDACachingHostAllocatorImpl::"
       "allocate_host_memory_slowpath(unsigned long, void**)");
  same("_ZN3c1013intrusive_ptrINS_10TensorImplENS_19UndefinedTensorImplEE6reset_Ev",
       "c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reset_()");
  same("_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
       "c10::detail::torchCheckFail(char const*, char const*, unsigned int, "
       "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)");
}

/* The store and retrieve reports' other frames (issue 14): function types, the address of a
 * function as a template argument, lambdas inside local names, and stacked clone suffixes. */
Test(demangle, function_types_lambdas_and_local_names) {
  same("_Z1fPFviE", "f(void (*)(int))");
  same("_ZN2at24CachingHostAllocatorImplIN3c104cuda10CUDAStreamESt10unique_ptrINS2_9CUDAEventESt8"
       "functionIFvPS5_EEENS_9HostBlockIS3_EEE8allocateEm",
       "at::CachingHostAllocatorImpl<c10::cuda::CUDAStream, std::unique_ptr<c10::cuda::CUDAEvent, "
       "std::function<void (c10::cuda::CUDAEvent*)> >, at::HostBlock<c10::cuda::CUDAStream> >::"
       "allocate(unsigned long)");
  same("_ZN2at29CachingHostAllocatorInterfaceINS_4cuda12_GLOBAL__N_128CUDACachingHostAllocatorImpl"
       "EXadL_ZNS2_17raw_local_deleterEPvEEE8allocateEm",
       "at::CachingHostAllocatorInterface<at::cuda::(anonymous namespace)::"
       "CUDACachingHostAllocatorImpl, &at::cuda::(anonymous namespace)::raw_local_deleter>::"
       "allocate(unsigned long)");
  same("_ZN3c1012function_refIFvPPcPKlllEE11callback_fnIN2at6native4AVX216VectorizedLoop2dIZZZNSA_"
       "18direct_copy_kernelERNS8_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE0_clEvEUlNS_4HalfEE_ZZZ"
       "NSA_18direct_copy_kernelESD_ENKSE_clEvENKSF_clEvEUlNS8_3vec4AVX210VectorizedISG_EEE_EEEEvl"
       "S2_S4_ll",
       "c10::function_ref<void (char**, long const*, long, long)>::callback_fn<at::native::AVX2::"
       "VectorizedLoop2d<at::native::AVX2::direct_copy_kernel(at::TensorIteratorBase&)::"
       "{lambda()#3}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::Half)#1}, "
       "at::native::AVX2::direct_copy_kernel(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
       "const::{lambda()#2}::operator()() const::{lambda(at::vec::AVX2::Vectorized<c10::Half>)#1}> "
       ">(long, char**, long const*, long, long)");
  same("_ZN3foo3barEv.isra.0.cold", "foo::bar() [clone .isra.0] [clone .cold]");
}

Test(demangle, members_templates_and_substitutions) {
  same("_ZN3foo3BarC2Ev", "foo::Bar::Bar()");
  same("_ZN3foo3BarD1Ev", "foo::Bar::~Bar()");
  same("_ZNK3foo3Bar3getEi", "foo::Bar::get(int) const");
  same("_ZN3foo3BaraSERKS0_", "foo::Bar::operator=(foo::Bar const&)");
  same("_ZNSt6vectorIiSaIiEE9push_backERKi",
       "std::vector<int, std::allocator<int> >::push_back(int const&)");
  same("_ZNSt3__16vectorIiNS_9allocatorIiEEE6resizeEm",
       "std::__1::vector<int, std::__1::allocator<int> >::resize(unsigned long)");
  same("_Z3maxIiET_S0_S0_", "max<int>(int, int)");
  same("_ZN9kv_engine5storeILi3ELb1EEEvPv", "kv_engine::store<3, true>(void*)");
  same("_ZSt4moveIRiEONSt16remove_referenceIT_E4typeEOS2_", "std::move<int&>(int&)");
  same("_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE3strEv.cold",
       "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::str() "
       "const [clone .cold]");
  same("_Z4funcv", "func()");
}

Test(demangle, refuses_what_it_does_not_understand) {
  char out[64] = "untouched";
  cr_assert_not(pg_demangle("main", out, sizeof out), "not a mangled name");
  cr_assert_not(pg_demangle("_Z1fPA10_i", out, sizeof out), "array types are not understood");
  cr_assert_not(pg_demangle("_Z1fPPFviE", out, sizeof out), "nor pointers to function pointers");
  cr_assert_not(pg_demangle("_ZN3foo", out, sizeof out), "cut short");
  cr_assert_not(pg_demangle("_Z3fooS5_", out, sizeof out), "a substitution that does not exist");
  cr_assert_not(pg_demangle("_Z999foo", out, sizeof out), "a length past the end");
  cr_assert_not(pg_demangle("_ZN3foo3BarC2Ev", out, 8), "does not fit");
  cr_assert_str_eq(out, "untouched");
}

/* ---- in reports: a frame whose symbol is a C++ name ------------------------------------------ */
#include "pg_symbolize.h"

/* A C function under a C++ name, as a C++ compiler would have emitted it. */
__attribute__((noinline, used)) int cxx_frame(int x) __asm__("_ZN2pg4demo5frameEi");
__attribute__((noinline, used)) int cxx_frame(int x) { return x * 3 + 1; }

Test(demangle, report_frames_are_demangled_with_and_without_addr2line) {
  pg_stack_t st;
  memset(&st, 0, sizeof st);
  st.depth = 1;
  st.flags = PG_STACK_EXACT_PC0;
  st.pc[0] = (void *)cxx_frame;
  static pg_symstack_t sym;
  /* 0: the signal-handler path (dladdr and the symbol table, no helper process). */
  for (int a2l = 0; a2l < 2; a2l++) {
    pg_symbolize_stack(&st, 1, a2l, &sym);
    cr_assert_str_eq(sym.f[0].function, "pg::demo::frame(int)", "addr2line=%d", a2l);
  }
  pg_symbolize_shutdown();
}
