/* gpukit-device: what the GPU kit runs on (tools/gpu-kit.sh run, step
 * "device")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One process, one thread, no state kept. Usage: gpukit-device LIBPINNEDFLOW
 * (the kit's libpinnedflow.so.0). The CUDA runtime is found by that
 * library's own lookup (pf_cuda_runtime_get: GST_PINNEDFLOW_CUDART, the
 * dynamic linker, /usr/local/cuda's folders, GST_PINNEDFLOW_CUDART_PATH;
 * see lib/pinnedflow/cuda/pf-cuda.c), so the probe measures the runtime
 * the tests and benches will load. The driver API is libcuda.so.1 (the
 * real driver, or the kit's stand-in first on LD_LIBRARY_PATH in an
 * emulator run). It prints one "key: value" line per fact:
 *   runtime, runtime_version, emulator, driver_version, devices, name,
 *   uuid, memory_mib, compute_capability, compute_mode,
 *   host_register_supported (attribute 99), host_register_read_only
 *   (attribute 113, cudaDevAttrHostRegisterReadOnlySupported), copies
 *   (what cudaHostRegister of a shared mapping, as a segment is, gives:
 *   DMA from the registered pages, or staged through a pinned buffer),
 *   loaded_cudart / loaded_cuda (the files /proc/self/maps shows).
 * Built by tools/gpu-kit.sh pack with the host's cc, no CUDA headers: the
 * few declarations it needs are written out here (values from
 * cuda_runtime_api.h / driver_types.h / cuda.h, stable since CUDA 11.1).
 * Exit status: 0 with a device, 77 without one (the reason on a line
 * "NO DEVICE: ..."), 1 on a broken runtime or library.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ATTR_COMPUTE_MODE 20
#define ATTR_CC_MAJOR 75
#define ATTR_CC_MINOR 76
#define ATTR_HOST_REGISTER_SUPPORTED 99
#define ATTR_HOST_REGISTER_READ_ONLY 113
#define HOST_REGISTER_PORTABLE 0x01
#define HOST_REGISTER_READ_ONLY 0x08
#define PROBE_BYTES (8u << 20)

/* The head of pf_cuda_runtime (pf-cuda.h; its layout is append-only). */
typedef struct
{
  char *library;
  char *key;
  int runtime_version;
} pf_runtime_head;

typedef int (*pf_get_fn) (const pf_runtime_head **, char *, size_t);
typedef int (*rt_int_fn) (int *);
typedef int (*rt_void_fn) (void);
typedef int (*rt_attr_fn) (int *, int, int);
typedef int (*rt_reg_fn) (void *, size_t, unsigned int);
typedef int (*rt_unreg_fn) (void *);
typedef const char *(*rt_str_fn) (int);
typedef int (*drv_init_fn) (unsigned int);
typedef int (*drv_name_fn) (char *, int, int);
typedef int (*drv_attr_fn) (int *, int, int);
typedef int (*drv_mem_fn) (size_t *, int);
typedef int (*drv_uuid_fn) (unsigned char *, int);

static const char *const compute_modes[] = {
  "DEFAULT", "EXCLUSIVE_THREAD (deprecated)", "PROHIBITED",
  "EXCLUSIVE_PROCESS"
};

static rt_str_fn err_name;

static const char *
ename (int err)
{
  const char *n = err_name ? err_name (err) : NULL;

  return n ? n : "error";
}

static void
print_attr (const char *key, rt_attr_fn attr, drv_attr_fn dattr, int id)
{
  int v = -1, err;

  err = attr (&v, id, 0);
  if (err != 0 && dattr)
    err = dattr (&v, id, 0);
  if (err != 0) {
    printf ("%s: unknown (attribute %d: %s %d)\n", key, id, ename (err), err);
    return;
  }
  if (id == ATTR_COMPUTE_MODE)
    printf ("%s: %s\n", key, v >= 0 && v < 4 ? compute_modes[v] : "unknown");
  else
    printf ("%s: %s (attribute %d = %d)\n", key, v ? "yes" : "no", id, v);
}

/* What pinnedflow's copies will be: a shared mapping (as a segment is)
 * registered read-only, else read-write, else staged. */
static void
probe_copies (void *rt)
{
  rt_reg_fn reg = (rt_reg_fn) dlsym (rt, "cudaHostRegister");
  rt_unreg_fn unreg = (rt_unreg_fn) dlsym (rt, "cudaHostUnregister");
  rt_void_fn last = (rt_void_fn) dlsym (rt, "cudaGetLastError");
  void *p;
  int err_ro, err_rw;

  if (!reg || !unreg || !last) {
    printf ("copies: unknown (cudaHostRegister missing)\n");
    return;
  }
  p = mmap (NULL, PROBE_BYTES, PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    printf ("copies: unknown (mmap failed)\n");
    return;
  }
  memset (p, 0x5a, PROBE_BYTES);
  err_ro = reg (p, PROBE_BYTES, HOST_REGISTER_PORTABLE |
      HOST_REGISTER_READ_ONLY);
  if (err_ro == 0) {
    unreg (p);
    printf ("copies: DMA (a shared mapping registers read-only, as a "
        "consumer's segment is)\n");
    goto done;
  }
  last ();
  err_rw = reg (p, PROBE_BYTES, HOST_REGISTER_PORTABLE);
  if (err_rw == 0) {
    unreg (p);
    printf ("copies: DMA from producer-side segments only (read-only "
        "registration: %s %d; a consumer's read-only mapping is staged)\n",
        ename (err_ro), err_ro);
    goto done;
  }
  last ();
  printf ("copies: staged (cudaHostRegister: read-only %s %d, read-write "
      "%s %d)\n", ename (err_ro), err_ro, ename (err_rw), err_rw);
done:
  munmap (p, PROBE_BYTES);
}

/* The CUDA libraries mapped in this process, from /proc/self/maps. */
static void
print_loaded (void)
{
  FILE *f = fopen ("/proc/self/maps", "r");
  char line[1024], seen[8][512];
  int n_seen = 0, i;

  if (f == NULL) {
    printf ("loaded: unknown (no /proc/self/maps)\n");
    return;
  }
  while (fgets (line, sizeof (line), f)) {
    char *path = strchr (line, '/'), *base;
    const char *key;

    if (path == NULL)
      continue;
    path[strcspn (path, "\n")] = '\0';
    base = strrchr (path, '/') + 1;
    if (strncmp (base, "libcudart", 9) == 0 || strstr (base, "pfemu-cudart"))
      key = "loaded_cudart";
    else if (strncmp (base, "libcuda.so", 10) == 0)
      key = "loaded_cuda";
    else
      continue;
    for (i = 0; i < n_seen; i++)
      if (strcmp (seen[i], path) == 0)
        break;
    if (i < n_seen || n_seen == 8)
      continue;
    snprintf (seen[n_seen++], sizeof (seen[0]), "%s", path);
    printf ("%s: %s\n", key, path);
  }
  fclose (f);
}

int
main (int argc, char **argv)
{
  const pf_runtime_head *head = NULL;
  pf_get_fn get;
  void *pf, *rt, *drv;
  rt_int_fn count, rt_version, drv_version;
  rt_attr_fn attr;
  drv_attr_fn dattr = NULL;
  int n = 0, v = 0, major = -1, minor = -1, err, res;
  char dev_name[256] = "", msg[2048] = "";

  if (argc != 2) {
    fprintf (stderr, "usage: %s LIBPINNEDFLOW\n", argv[0]);
    return 1;
  }
  if ((pf = dlopen (argv[1], RTLD_NOW | RTLD_LOCAL)) == NULL) {
    printf ("BROKEN: %s\n", dlerror ());
    return 1;
  }
  if ((get = (pf_get_fn) dlsym (pf, "pf_cuda_runtime_get")) == NULL) {
    printf ("BROKEN: %s has no pf_cuda_runtime_get\n", argv[1]);
    return 1;
  }
  printf ("lookup: GST_PINNEDFLOW_CUDART=%s GST_PINNEDFLOW_CUDART_PATH=%s\n",
      getenv ("GST_PINNEDFLOW_CUDART") ? getenv ("GST_PINNEDFLOW_CUDART") :
      "(unset)", getenv ("GST_PINNEDFLOW_CUDART_PATH") ?
      getenv ("GST_PINNEDFLOW_CUDART_PATH") : "(unset)");
  res = get (&head, msg, sizeof (msg));
  if (res < 0 || head == NULL) {
    printf ("runtime: none\nNO DEVICE: no CUDA runtime: %s\n", msg);
    print_loaded ();
    return res == -38 ? 1 : 77; /* -ENOSYS: a broken runtime */
  }
  /* the same library, already open: its handle */
  rt = dlopen (head->library, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (rt == NULL) {
    printf ("runtime: %s\nBROKEN: not open in this process\n", head->library);
    return 1;
  }
  count = (rt_int_fn) dlsym (rt, "cudaGetDeviceCount");
  rt_version = (rt_int_fn) dlsym (rt, "cudaRuntimeGetVersion");
  drv_version = (rt_int_fn) dlsym (rt, "cudaDriverGetVersion");
  attr = (rt_attr_fn) dlsym (rt, "cudaDeviceGetAttribute");
  err_name = (rt_str_fn) dlsym (rt, "cudaGetErrorName");
  if (!count || !rt_version || !drv_version || !attr) {
    printf ("runtime: %s\nBROKEN: a cuda* function is missing\n",
        head->library);
    return 1;
  }
  printf ("runtime: %s\n", head->library);
  printf ("emulator: %s\n", dlsym (rt, "pfemu_query") ? "yes" : "no");
  if (rt_version (&v) == 0)
    printf ("runtime_version: %d.%d\n", v / 1000, (v % 1000) / 10);
  v = 0;
  err = drv_version (&v);
  if (err == 0 && v > 0)
    printf ("driver_version: CUDA %d.%d\n", v / 1000, (v % 1000) / 10);
  else
    printf
        ("driver_version: none (cudaDriverGetVersion gives %d, %s %d: no NVIDIA driver)\n",
        v, ename (err), err);
  err = count (&n);
  if (err != 0 || n <= 0) {
    printf ("devices: 0\nNO DEVICE: cudaGetDeviceCount: %s (%d), %d "
        "devices (runtime %s%s)\n", ename (err), err, n, head->library,
        v == 0 ? "; no NVIDIA driver" : "");
    print_loaded ();
    return 77;
  }
  printf ("devices: %d\n", n);

  /* the name, UUID and memory come from the driver API (cudart has them
   * only in cudaDeviceProp, whose layout changes between versions) */
  drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (drv) {
    drv_init_fn init = (drv_init_fn) dlsym (drv, "cuInit");
    drv_name_fn get_name = (drv_name_fn) dlsym (drv, "cuDeviceGetName");
    drv_mem_fn mem = (drv_mem_fn) dlsym (drv, "cuDeviceTotalMem_v2");
    drv_uuid_fn uuid = (drv_uuid_fn) dlsym (drv, "cuDeviceGetUuid_v2");
    unsigned char u[16];
    size_t bytes = 0;

    if (uuid == NULL)
      uuid = (drv_uuid_fn) dlsym (drv, "cuDeviceGetUuid");
    dattr = (drv_attr_fn) dlsym (drv, "cuDeviceGetAttribute");
    if (init && init (0) == 0) {
      if (get_name && get_name (dev_name, sizeof (dev_name), 0) != 0)
        dev_name[0] = '\0';
      if (mem && mem (&bytes, 0) == 0)
        printf ("memory_mib: %zu\n", bytes >> 20);
      if (uuid && uuid (u, 0) == 0)
        printf ("uuid: GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
            "%02x%02x%02x%02x%02x%02x\n", u[0], u[1], u[2], u[3], u[4], u[5],
            u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
      else
        printf ("uuid: unknown (cuDeviceGetUuid failed)\n");
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
  probe_copies (rt);
  print_loaded ();
  return 0;
}
