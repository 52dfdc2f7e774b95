/* Intent: the loader half of the static-runtime test: a program with no CUDA of its own
 * dlopen()s a shared object (argv[1]) after start-up, as Python loads an extension module, and
 * calls its ext_device_count(). Usage: dlopen_ext LIBRARY. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen_ext: %s\n", dlerror());
    return 2;
  }
  int (*fn)(void) = (int (*)(void))dlsym(h, "ext_device_count");
  if (!fn) return 2;
  fn();
  return 0;
}
