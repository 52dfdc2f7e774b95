/* sc_core.c: simcuda's lifecycle and process-wide state: lazy initialization from the SIMCUDA_*
 * environment, the fork rule, the per-thread last error, fault injection (SIMCUDA_FAIL), and the
 * device/version queries. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_internal.h"
#include "sc_engine.h"

/* Large enough that a read right after a device-to-host enqueue deterministically sees the old
 * bytes on a loaded 2-core machine, small enough that test suites with hundreds of ops stay fast. */
#define SC_DEFAULT_LATENCY_US 2000
#define SC_DEFAULT_DEVICE_MB 16384 /* virtual reservation only (MAP_NORESERVE) */

sc_config sc_cfg;
atomic_bool sc_forked_child;

static pthread_once_t sc_once = PTHREAD_ONCE_INIT;
static atomic_bool sc_started;
static SC_STATIC_TLS cudaError_t sc_last_error;
static SC_STATIC_TLS int sc_current_device;
static SC_STATIC_TLS bool sc_ctx_unbound; /* cuCtxSetCurrent(NULL) until the next bind */

int sc_device_current(void) { return sc_current_device; }

/* The driver's per-thread current context is the runtime's current device: binding device d's
 * primary context makes d current, and cudaSetDevice binds its primary context (as CUDA's). */
void sc_ctx_bind(int device) {
  if (device < 0) {
    sc_ctx_unbound = true;
    return;
  }
  sc_current_device = device;
  sc_ctx_unbound = false;
}

int sc_ctx_bound_device(void) { return sc_ctx_unbound ? -1 : sc_current_device; }

bool sc_device_valid(int device) { return device >= 0 && device < sc_cfg.devices; }

/* ---- fault injection ------------------------------------------------------------------- */
#define SC_MAX_FAULTS 32
typedef struct sc_fault_rule {
  char name[64];
  unsigned long nth;
  int code; /* 0: the function's realistic default */
  atomic_ulong calls;
} sc_fault_rule;

static sc_fault_rule sc_faults[SC_MAX_FAULTS];
static size_t sc_nfaults;

/* The error a real runtime would most plausibly return when the named call fails. */
static cudaError_t sc_fault_default(const char *name) {
  static const struct {
    const char *prefix;
    cudaError_t err;
  } table[] = {
      {"cudaHostAlloc", cudaErrorMemoryAllocation},  {"cudaMallocHost", cudaErrorMemoryAllocation},
      {"cudaMalloc", cudaErrorMemoryAllocation},     {"cudaHostRegister", cudaErrorMemoryAllocation},
      {"cudaLaunch", cudaErrorLaunchOutOfResources}, {"cudaStreamCreate", cudaErrorMemoryAllocation},
      {"cudaEventCreate", cudaErrorMemoryAllocation},     {"cudaGraph", cudaErrorInvalidValue},
      {"cudaMemcpy", cudaErrorInvalidValue},         {"cudaMemset", cudaErrorInvalidValue},
      {"cudaStream", cudaErrorInvalidResourceHandle}, {"cudaEvent", cudaErrorInvalidResourceHandle},
      /* driver names (the CUresult of the same number) */
      {"cuMemHostAlloc", cudaErrorMemoryAllocation}, {"cuMemAlloc", cudaErrorMemoryAllocation},
      {"cuMemHostRegister", cudaErrorMemoryAllocation}, {"cuLaunch", cudaErrorLaunchOutOfResources},
      {"cuStreamCreate", cudaErrorMemoryAllocation}, {"cuEventCreate", cudaErrorMemoryAllocation},
      {"cuMemcpy", cudaErrorInvalidValue},           {"cuMemset", cudaErrorInvalidValue},
      {"cuStream", cudaErrorInvalidResourceHandle},  {"cuEvent", cudaErrorInvalidResourceHandle},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
    if (strncmp(name, table[i].prefix, strlen(table[i].prefix)) == 0) return table[i].err;
  return cudaErrorUnknown;
}

/* SIMCUDA_FAIL="name:N[=code],name:N": the Nth call (1-based) of name fails. */
static void sc_parse_faults(const char *spec) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok && sc_nfaults < SC_MAX_FAULTS;
       tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (!colon) {
      fprintf(stderr, "simcuda: SIMCUDA_FAIL: ignoring '%s' (want name:N)\n", tok);
      continue;
    }
    *colon = '\0';
    sc_fault_rule *r = &sc_faults[sc_nfaults];
    snprintf(r->name, sizeof r->name, "%s", tok);
    char *end = NULL;
    r->nth = strtoul(colon + 1, &end, 10);
    r->code = (end && *end == '=') ? atoi(end + 1) : 0;
    if (r->nth == 0) {
      fprintf(stderr, "simcuda: SIMCUDA_FAIL: ignoring '%s' (N must be >= 1)\n", tok);
      continue;
    }
    atomic_init(&r->calls, 0);
    sc_nfaults++;
  }
}

bool sc_fault(const char *name, cudaError_t *err) {
  for (size_t i = 0; i < sc_nfaults; i++) {
    sc_fault_rule *r = &sc_faults[i];
    if (strcmp(r->name, name) != 0) continue;
    if (atomic_fetch_add(&r->calls, 1) + 1 == r->nth) {
      *err = r->code ? (cudaError_t)r->code : sc_fault_default(name);
      return true;
    }
  }
  return false;
}

/* ---- initialization -------------------------------------------------------------------- */
static double sc_env_double(const char *name, double dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  char *end = NULL;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || end == v || d < 0) {
    fprintf(stderr, "simcuda: ignoring %s='%s' (want a non-negative number)\n", name, v);
    return dflt;
  }
  return d;
}

/* SIMCUDA_DEVICES: a whole number 1..SC_MAX_DEVICES, or unset/empty for 1. Anything else is a
 * configuration error, not a value to guess at: it is reported, and no device exists. */
static int sc_env_devices(void) {
  const char *v = getenv("SIMCUDA_DEVICES");
  if (!v || !*v) return 1;
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 1 || n > SC_MAX_DEVICES) {
    fprintf(stderr,
            "simcuda: SIMCUDA_DEVICES='%s' is invalid (want a whole number from 1 to %d); "
            "every CUDA call will fail with cudaErrorNoDevice\n",
            v, SC_MAX_DEVICES);
    return 0;
  }
  return (int)n;
}

static void sc_atfork_child(void) {
  /* The child has none of the parent's worker threads, so queued work could never complete:
   * like CUDA, a child of a process that used the runtime gets cudaErrorInitializationError. */
  if (atomic_load(&sc_started)) atomic_store(&sc_forked_child, true);
}

static void sc_do_init(void) {
  sc_cfg.latency_ns = (uint64_t)(sc_env_double("SIMCUDA_LATENCY_US", SC_DEFAULT_LATENCY_US) * 1000.0);
  sc_cfg.gbps = sc_env_double("SIMCUDA_GBPS", 0);
  sc_cfg.device_bytes = (size_t)sc_env_double("SIMCUDA_DEVICE_MB", SC_DEFAULT_DEVICE_MB) << 20;
  sc_cfg.runtime_version = (int)sc_env_double("SIMCUDA_RUNTIME_VERSION", 13000);
  sc_cfg.unpin_return_ns = (uint64_t)(sc_env_double("SIMCUDA_UNPIN_RETURN_US", 0) * 1000.0);
  sc_cfg.io_uring = sc_env_double("SIMCUDA_IO_URING", 1) != 0;
  if (sc_cfg.runtime_version != 13000 && sc_cfg.runtime_version != 12080) {
    fprintf(stderr, "simcuda: SIMCUDA_RUNTIME_VERSION=%d unsupported (13000 or 12080); using 13000\n",
            sc_cfg.runtime_version);
    sc_cfg.runtime_version = 13000;
  }
  sc_cfg.devices = sc_env_devices();
  const char *fail = getenv("SIMCUDA_FAIL");
  if (fail && *fail) sc_parse_faults(fail);
  sc_arena_init();
  pthread_atfork(NULL, NULL, sc_atfork_child);
  atomic_store(&sc_started, true);
}

void sc_init(void) { pthread_once(&sc_once, sc_do_init); }

int sc_runtime_version(void) {
  sc_init();
  return sc_cfg.runtime_version;
}

uint64_t sc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sc_sleep_until_ns(uint64_t deadline_ns) {
  /* A sleep is a system call even when the deadline has passed, and a costly one in a VM; a
   * worker catching up on a backlog must not pay it per op. */
  if (sc_now_ns() >= deadline_ns) return;
  struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                        .tv_nsec = (long)(deadline_ns % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

cudaError_t sc_ret(cudaError_t err) {
  /* cudaErrorNotReady is a status, not an error: CUDA does not record it. */
  if (err != cudaSuccess && err != cudaErrorNotReady) sc_last_error = err;
  return err;
}

cudaError_t sc_last_error_get(void) { return sc_last_error; }
void sc_last_error_set(cudaError_t err) { sc_last_error = err; }

/* SC_ENTER as a function, for the runtime layer (it reaches it through the driver's engine
 * table): cudaSuccess, or the error the call must return (already recorded as the last error). */
cudaError_t sc_rt_enter(const char *name) {
  sc_init();
  if (atomic_load_explicit(&sc_forked_child, memory_order_relaxed))
    return sc_ret(cudaErrorInitializationError);
  if (sc_cfg.devices == 0) return sc_ret(cudaErrorNoDevice);
  cudaError_t err;
  if (sc_fault(name, &err)) return sc_ret(err);
  return cudaSuccess;
}

/* ---- errors and versions --------------------------------------------------------------- */
SC_API cudaError_t cudaGetLastError(void) {
  cudaError_t e = sc_last_error;
  sc_last_error = cudaSuccess;
  return e;
}

SC_API cudaError_t cudaPeekAtLastError(void) { return sc_last_error; }

SC_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
  if (!runtimeVersion) return sc_ret(cudaErrorInvalidValue);
  *runtimeVersion = sc_runtime_version();
  return cudaSuccess;
}

SC_API cudaError_t cudaDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return sc_ret(cudaErrorInvalidValue);
  *driverVersion = 13000; /* a 13.0 driver runs both the 12.8 and the 13.0 runtime ABI */
  return cudaSuccess;
}

SC_API cudaError_t cudaGetDeviceCount(int *count) {
  SC_ENTER("cudaGetDeviceCount");
  if (!count) return sc_ret(cudaErrorInvalidValue);
  *count = sc_cfg.devices;
  return cudaSuccess;
}

SC_API cudaError_t cudaSetDevice(int device) {
  SC_ENTER("cudaSetDevice");
  if (!sc_device_valid(device)) return sc_ret(cudaErrorInvalidDevice);
  sc_ctx_bind(device);
  return cudaSuccess;
}

SC_API cudaError_t cudaGetDevice(int *device) {
  SC_ENTER("cudaGetDevice");
  if (!device) return sc_ret(cudaErrorInvalidValue);
  *device = sc_current_device;
  return cudaSuccess;
}

SC_API cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  SC_ENTER("cudaSetDeviceFlags");
  (void)flags;
  return cudaSuccess;
}

SC_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  SC_ENTER("cudaDeviceGetStreamPriorityRange");
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return cudaSuccess;
}

SC_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  SC_ENTER("cudaGetDeviceProperties");
  if (!prop) return sc_ret(cudaErrorInvalidValue);
  if (!sc_device_valid(device)) return sc_ret(cudaErrorInvalidDevice);
  sc_device_properties(prop, device);
  return cudaSuccess;
}

/* An H200's values (sc_devattr.c); a number CUDA does not define is cudaErrorInvalidValue. */
SC_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  SC_ENTER("cudaDeviceGetAttribute");
  if (!value) return sc_ret(cudaErrorInvalidValue);
  if (!sc_device_valid(device)) return sc_ret(cudaErrorInvalidDevice);
  if (sc_device_attribute((int)attr, device, value) != 0) return sc_ret(cudaErrorInvalidValue);
  return cudaSuccess;
}
