/* gpukit-device: what the GPU kit runs on (tools/gpu-kit.sh run, step
 * "device")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One process, one thread, no state kept: it opens the CUDA runtime the way
 * libpinnedflow does (GST_PINNEDFLOW_CUDART, else libcudart.so.13, .12 and
 * the same under /usr/local/cuda), and the driver API (libcuda.so.1: the
 * real driver, or the kit's stand-in first on LD_LIBRARY_PATH in an
 * emulator run), and prints one "key: value" line per fact:
 *   runtime, runtime_version, driver_version, devices, name, memory_mib,
 *   compute_capability, compute_mode, host_register_supported (attribute
 *   99), host_register_read_only (attribute 113,
 *   cudaDevAttrHostRegisterReadOnlySupported), emulator (yes/no).
 * Built by tools/gpu-kit.sh pack with the host's cc, no CUDA headers: the
 * few declarations it needs are written out here (values from
 * cuda_runtime_api.h / driver_types.h, stable since CUDA 11.1).
 * Exit status: 0 with a device, 77 without one (the reason on stdout), 1 on
 * a broken runtime.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTR_COMPUTE_MODE 20
#define ATTR_CC_MAJOR 75
#define ATTR_CC_MINOR 76
#define ATTR_HOST_REGISTER_SUPPORTED 99
#define ATTR_HOST_REGISTER_READ_ONLY 113

typedef int (*rt_int_fn) (int *);
typedef int (*rt_attr_fn) (int *, int, int);
typedef const char *(*rt_str_fn) (int);
typedef int (*drv_init_fn) (unsigned int);
typedef int (*drv_name_fn) (char *, int, int);
typedef int (*drv_attr_fn) (int *, int, int);
typedef int (*drv_mem_fn) (size_t *, int);

static const char *const compute_modes[] = {
  "DEFAULT", "EXCLUSIVE_THREAD (deprecated)", "PROHIBITED",
  "EXCLUSIVE_PROCESS"
};

static void *
open_runtime (const char **name)
{
  static const char *const names[] = {
    "libcudart.so.13", "libcudart.so.12", "libcudart.so",
    "/usr/local/cuda/lib64/libcudart.so.13",
    "/usr/local/cuda/lib64/libcudart.so.12",
  };
  const char *env = getenv ("GST_PINNEDFLOW_CUDART");
  void *h;
  size_t i;

  if (env && *env) {
    *name = env;
    return dlopen (env, RTLD_NOW | RTLD_LOCAL);
  }
  for (i = 0; i < sizeof (names) / sizeof (names[0]); i++) {
    if ((h = dlopen (names[i], RTLD_NOW | RTLD_LOCAL)) != NULL) {
      *name = names[i];
      return h;
    }
  }
  *name = "libcudart.so.13 (and .12, /usr/local/cuda/lib64)";
  return NULL;
}

static void
print_attr (const char *key, rt_attr_fn attr, drv_attr_fn dattr, int id)
{
  int v = -1, err;

  err = attr (&v, id, 0);
  if (err != 0 && dattr)
    err = dattr (&v, id, 0);
  if (err != 0) {
    printf ("%s: unknown (attribute %d: error %d)\n", key, id, err);
    return;
  }
  if (id == ATTR_COMPUTE_MODE)
    printf ("%s: %s\n", key, v >= 0 && v < 4 ? compute_modes[v] : "unknown");
  else
    printf ("%s: %s\n", key, v ? "yes" : "no");
}

int
main (void)
{
  const char *name = NULL;
  void *rt = open_runtime (&name), *drv;
  rt_int_fn count, rt_version, drv_version;
  rt_attr_fn attr;
  rt_str_fn err_name;
  drv_attr_fn dattr = NULL;
  int n = 0, v = 0, major = -1, minor = -1, err;
  char dev_name[256] = "";

  if (rt == NULL) {
    printf ("runtime: none (%s)\nNO DEVICE: no CUDA runtime: %s\n", name,
        dlerror ());
    return 77;
  }
  count = (rt_int_fn) dlsym (rt, "cudaGetDeviceCount");
  rt_version = (rt_int_fn) dlsym (rt, "cudaRuntimeGetVersion");
  drv_version = (rt_int_fn) dlsym (rt, "cudaDriverGetVersion");
  attr = (rt_attr_fn) dlsym (rt, "cudaDeviceGetAttribute");
  err_name = (rt_str_fn) dlsym (rt, "cudaGetErrorName");
  if (!count || !rt_version || !drv_version || !attr) {
    printf ("runtime: %s\nBROKEN: a cuda* function is missing\n", name);
    return 1;
  }
  printf ("runtime: %s\n", name);
  printf ("emulator: %s\n", dlsym (rt, "pfemu_query") ? "yes" : "no");
  if (rt_version (&v) == 0)
    printf ("runtime_version: %d.%d\n", v / 1000, (v % 1000) / 10);
  v = 0;
  if (drv_version (&v) == 0)
    printf ("driver_version: CUDA %d.%d\n", v / 1000, (v % 1000) / 10);
  err = count (&n);
  if (err != 0 || n <= 0) {
    printf ("devices: 0\nNO DEVICE: cudaGetDeviceCount: %s (%d), %d "
        "devices\n", err_name ? err_name (err) : "error", err, n);
    return 77;
  }
  printf ("devices: %d\n", n);

  /* the name and memory come from the driver API (cudart has them only in
   * cudaDeviceProp, whose layout changes between versions) */
  drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (drv) {
    drv_init_fn init = (drv_init_fn) dlsym (drv, "cuInit");
    drv_name_fn get_name = (drv_name_fn) dlsym (drv, "cuDeviceGetName");
    drv_mem_fn mem = (drv_mem_fn) dlsym (drv, "cuDeviceTotalMem_v2");
    size_t bytes = 0;

    dattr = (drv_attr_fn) dlsym (drv, "cuDeviceGetAttribute");
    if (init && init (0) == 0) {
      if (get_name && get_name (dev_name, sizeof (dev_name), 0) != 0)
        dev_name[0] = '\0';
      if (mem && mem (&bytes, 0) == 0)
        printf ("memory_mib: %zu\n", bytes >> 20);
    } else {
      dattr = NULL;
    }
  }
  printf ("name: %s\n", dev_name[0] ? dev_name : "unknown (no libcuda.so.1)");
  if (attr (&major, ATTR_CC_MAJOR, 0) == 0 &&
      attr (&minor, ATTR_CC_MINOR, 0) == 0)
    printf ("compute_capability: %d.%d\n", major, minor);
  print_attr ("compute_mode", attr, dattr, ATTR_COMPUTE_MODE);
  print_attr ("host_register_supported", attr, dattr,
      ATTR_HOST_REGISTER_SUPPORTED);
  print_attr ("host_register_read_only", attr, dattr,
      ATTR_HOST_REGISTER_READ_ONLY);
  return 0;
}
