/* pinnedflow tests: the one CUDA runtime lookup (pf-cuda.c) and the
 * caller's last-error slot after a failed device lookup
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One case per process (argv[1]): the lookup caches what it opened and a
 * loaded library stays, so each order is checked in a fresh process.
 *
 *   lasterror    (GST_PINNEDFLOW_CUDART = the emulator) a device lookup
 *                that fails leaves nothing in the calling thread's
 *                last-error slot, whose error it reported in its message:
 *                no device (cudaGetDeviceCount answers 100), no driver
 *                (35), cudaSetDevice failing (open_device). Control: a raw
 *                cudaGetDeviceCount on the same emulator does leave 100
 *                there, so the check can fail.
 *   explicit     GST_PINNEDFLOW_CUDART is honoured and nothing else is
 *                tried: naming a missing file fails (-ENOENT, the variable
 *                named) with no libcudart mapped in the process, though
 *                GST_PINNEDFLOW_CUDART_PATH and the machine have one;
 *                naming a copy opens that copy, the only one mapped
 *   loaded       a runtime already loaded under the soname libcudart.so.13
 *                (as PyTorch's is, through its DT_NEEDED) is the one the
 *                lookup returns: its functions, the only libcudart mapped,
 *                though GST_PINNEDFLOW_CUDART_PATH and the ld.so cache
 *                name others
 *   python-path  with CUDA's folders hidden (a mount namespace, tmpfs over
 *                /usr/local/cuda*), the folders of GST_PINNEDFLOW_CUDART_PATH
 *                with nvidia/cu13/lib appended: a copy in
 *                SITE/nvidia/cu13/lib (the tree nvidia-cuda-runtime
 *                installs in a Python's site-packages) is opened, the first
 *                folder (with no runtime) passed over. 77 (SKIP, with the
 *                reason) where no mount namespace can be made, or where a
 *                runtime outside the test's folders is still visible.
 *
 * The copies: PFEMU_CUDART13, the cudart emulator linked with the soname
 * libcudart.so.13 (tests/cuda/meson.build), copied as libcudart.so.13 into
 * folders of a temporary tree removed at the end. Which file was loaded is
 * read back from /proc/self/maps.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pinnedflow/pf-cuda.h>

#include "pf-test-util.h"

#define MAX_MAPPED 8

static char tree[PATH_MAX];

static void
remove_tree (void)
{
  if (tree[0] != '\0')
    pf_test_remove_tree (tree);
  tree[0] = '\0';
}

/* a failed check: the temporary tree goes too */
static void
fail_exit (void)
{
  remove_tree ();
  exit (1);
}

/* ------------------------------------------------------------ helpers */

/* @buf = the tree + @suffix */
static void
tree_path (char *buf, size_t len, const char *suffix)
{
  int n = snprintf (buf, len, "%s%s", tree, suffix);

  CHECK_MSG (n > 0 && (size_t) n < len, "path too long: %s%s", tree, suffix);
}

/* Copies @src to @dir/@name, making @dir (and its parents below the tree);
 * the copy's path in @out. */
static void
copy_runtime (const char *src, const char *dir, char *out, size_t out_len)
{
  char path[PATH_MAX], buf[65536];
  const char *p;
  int in, fd, n;
  ssize_t r;

  /* mkdir -p, from the tree down */
  for (p = dir + strlen (tree) + 1; (p = strchr (p, '/')) != NULL; p++) {
    snprintf (path, sizeof (path), "%.*s", (int) (p - dir), dir);
    CHECK_MSG (mkdir (path, 0700) == 0 || errno == EEXIST, "mkdir %s: %s",
        path, strerror (errno));
  }
  CHECK_MSG (mkdir (dir, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", dir,
      strerror (errno));
  n = snprintf (out, out_len, "%s/libcudart.so.13", dir);
  CHECK (n > 0 && (size_t) n < out_len);
  in = open (src, O_RDONLY | O_CLOEXEC);
  CHECK_MSG (in >= 0, "open %s: %s", src, strerror (errno));
  fd = open (out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
  CHECK_MSG (fd >= 0, "create %s: %s", out, strerror (errno));
  while ((r = read (in, buf, sizeof (buf))) > 0)
    CHECK_MSG (write (fd, buf, (size_t) r) == r, "write %s: %s", out,
        strerror (errno));
  CHECK_MSG (r == 0, "read %s: %s", src, strerror (errno));
  close (in);
  CHECK (close (fd) == 0);
}

/* The files mapped in this process whose name starts with "libcudart"
 * (/proc/self/maps), each once, into @paths. Returns how many. */
static int
mapped_cudarts (char paths[MAX_MAPPED][PATH_MAX])
{
  FILE *f = fopen ("/proc/self/maps", "re");
  char line[PATH_MAX + 128];
  int n = 0, i, seen;

  CHECK_MSG (f != NULL, "/proc/self/maps: %s", strerror (errno));
  while (fgets (line, sizeof (line), f) != NULL) {
    char *path = strchr (line, '/'), *base, *nl;

    if (path == NULL)
      continue;
    if ((nl = strchr (path, '\n')) != NULL)
      *nl = '\0';
    base = strrchr (path, '/') + 1;
    if (strncmp (base, "libcudart", 9) != 0)
      continue;
    for (seen = 0, i = 0; i < n; i++)
      seen |= strcmp (paths[i], path) == 0;
    if (!seen && n < MAX_MAPPED)
      snprintf (paths[n++], PATH_MAX, "%s", path);
  }
  fclose (f);
  return n;
}

/* Exactly one libcudart mapped, and it is @expected (NULL: none). */
static void
check_mapped (const char *expected)
{
  char paths[MAX_MAPPED][PATH_MAX];
  int n = mapped_cudarts (paths), i;

  for (i = 0; i < n; i++)
    printf ("  mapped: %s\n", paths[i]);
  if (expected == NULL) {
    CHECK_MSG (n == 0, "%d libcudart file(s) mapped, none expected (first: "
        "%s)", n, n ? paths[0] : "");
    return;
  }
  CHECK_MSG (n == 1, "%d libcudart files mapped, expected only %s", n,
      expected);
  CHECK_MSG (strcmp (paths[0], expected) == 0, "mapped %s, expected %s",
      paths[0], expected);
}

/* The file that holds the table's cudaGetDeviceCount. */
static void
check_table_from (const pf_cuda_runtime * rt, const char *expected)
{
  Dl_info info;
  char real[PATH_MAX];

  CHECK (dladdr (*(void **) (&rt->GetDeviceCount), &info) != 0);
  CHECK_MSG (realpath (info.dli_fname, real) != NULL, "realpath %s: %s",
      info.dli_fname, strerror (errno));
  CHECK_MSG (strcmp (real, expected) == 0, "the table's functions are in "
      "%s, expected %s", real, expected);
}

static const char *
emulator13 (void)
{
  const char *src = getenv ("PFEMU_CUDART13");

  CHECK_MSG (src != NULL && access (src, R_OK) == 0, "PFEMU_CUDART13 must "
      "name the emulator linked as libcudart.so.13 (%s)", src ? src : "unset");
  return src;
}

static void
make_tree (void)
{
  char made[PATH_MAX];

  CHECK (pf_test_make_tmpdir (made, sizeof (made), "cudart-lookup") == 0);
  /* compared with /proc/self/maps' paths, which are resolved */
  CHECK_MSG (realpath (made, tree) != NULL, "realpath %s", made);
}

/* ------------------------------------------------------------ lasterror */

static void
lasterror_after (const char *what, int expected_res, const char *in_msg,
    int open)
{
  void *emu = dlopen (getenv ("GST_PINNEDFLOW_CUDART"), RTLD_NOW | RTLD_LOCAL);
  void (*reset) (void);
  long (*query) (const char *);
  const pf_cuda_runtime *rt = NULL, *got = NULL;
  char msg[2048] = "";
  int res;

  CHECK_MSG (emu != NULL, "dlopen the emulator: %s", dlerror ());
  *(void **) (&reset) = dlsym (emu, "pfemu_reset");
  *(void **) (&query) = dlsym (emu, "pfemu_query");
  CHECK (reset != NULL && query != NULL);
  reset ();
  CHECK_INT (pf_cuda_runtime_get (&rt, msg, sizeof (msg)), ==, 0);
  if (open)
    res = pf_cuda_runtime_open_device (0, &got, msg, sizeof (msg));
  else
    res = pf_cuda_runtime_find_device (0, &got, msg, sizeof (msg));
  printf ("%s: %d %s\n", what, res, msg);
  CHECK_INT (res, ==, expected_res);
  CHECK (got == NULL);
  CHECK_MSG (strstr (msg, in_msg) != NULL, "'%s' not in: %s", in_msg, msg);
  /* the slot, read without taking it */
  CHECK_MSG (rt->PeekAtLastError () == PF_CUDA_SUCCESS, "%s: the caller's "
      "last-error slot holds %s (%d) after the lookup reported it", what,
      rt->GetErrorName (rt->PeekAtLastError ()), rt->PeekAtLastError ());
  CHECK_INT (query ("lasterror.set"), ==, 0);
  dlclose (emu);
}

static void
run_lasterror (void)
{
  const pf_cuda_runtime *rt = NULL;
  char msg[2048] = "";
  int count = -1;

  CHECK_MSG (getenv ("GST_PINNEDFLOW_CUDART") != NULL,
      "GST_PINNEDFLOW_CUDART must name the emulator");
  setenv ("PFEMU_DEVICE_COUNT", "0", 1);
  lasterror_after ("no device", -ENODEV, "cudaErrorNoDevice (100)", 0);

  /* control: the emulator's slot does hold what a raw call leaves */
  CHECK_INT (pf_cuda_runtime_get (&rt, msg, sizeof (msg)), ==, 0);
  CHECK_INT (rt->GetDeviceCount (&count), ==, PF_CUDA_ERROR_NO_DEVICE);
  CHECK_INT (rt->PeekAtLastError (), ==, PF_CUDA_ERROR_NO_DEVICE);
  CHECK_INT (rt->GetLastError (), ==, PF_CUDA_ERROR_NO_DEVICE);
  CHECK_INT (rt->PeekAtLastError (), ==, PF_CUDA_SUCCESS);
  unsetenv ("PFEMU_DEVICE_COUNT");

  setenv ("PFEMU_INSUFFICIENT_DRIVER", "1", 1);
  lasterror_after ("no driver", -ENODEV, "cudaErrorInsufficientDriver (35)", 0);
  lasterror_after ("no driver (open)", -ENODEV,
      "cudaErrorInsufficientDriver (35)", 1);
  unsetenv ("PFEMU_INSUFFICIENT_DRIVER");

  setenv ("PFEMU_FAIL", "SetDevice:1:101", 1);
  lasterror_after ("cudaSetDevice fails", -EIO, "cudaSetDevice(0) failed", 1);
  unsetenv ("PFEMU_FAIL");
}

/* ------------------------------------------------------------ explicit */

static void
run_explicit (void)
{
  const char *src = emulator13 ();
  const pf_cuda_runtime *rt = NULL;
  char dir[PATH_MAX], explicit_rt[PATH_MAX], site_rt[PATH_MAX];
  char missing[PATH_MAX], msg[2048] = "";

  make_tree ();
  tree_path (dir, sizeof (dir), "/explicit");
  copy_runtime (src, dir, explicit_rt, sizeof (explicit_rt));
  tree_path (dir, sizeof (dir), "/site/nvidia/cu13/lib");
  copy_runtime (src, dir, site_rt, sizeof (site_rt));
  tree_path (dir, sizeof (dir), "/site");
  setenv ("GST_PINNEDFLOW_CUDART_PATH", dir, 1);

  /* a missing file: only it tried */
  tree_path (missing, sizeof (missing), "/none/libcudart.so.13");
  setenv ("GST_PINNEDFLOW_CUDART", missing, 1);
  CHECK_INT (pf_cuda_runtime_get (&rt, msg, sizeof (msg)), ==, -ENOENT);
  printf ("explicit, missing: %s\n", msg);
  CHECK (rt == NULL);
  CHECK_MSG (strstr (msg, "GST_PINNEDFLOW_CUDART=") != NULL
      && strstr (msg, missing) != NULL, "%s", msg);
  check_mapped (NULL);

  /* a copy: that copy, and only it */
  setenv ("GST_PINNEDFLOW_CUDART", explicit_rt, 1);
  CHECK_INT (pf_cuda_runtime_get (&rt, msg, sizeof (msg)), ==, 0);
  printf ("explicit: %s\n", rt->library);
  CHECK_MSG (strcmp (rt->library, explicit_rt) == 0, "%s", rt->library);
  check_table_from (rt, explicit_rt);
  check_mapped (explicit_rt);
}

/* ------------------------------------------------------------ loaded */

static void
run_loaded (void)
{
  const char *src = emulator13 ();
  const pf_cuda_runtime *rt = NULL;
  char dir[PATH_MAX], loaded_rt[PATH_MAX], site_rt[PATH_MAX], msg[2048] = "";
  void *h;

  make_tree ();
  tree_path (dir, sizeof (dir),
      "/torch/lib/python3/site-packages/nvidia/cu13/lib");
  copy_runtime (src, dir, loaded_rt, sizeof (loaded_rt));
  tree_path (dir, sizeof (dir), "/site/nvidia/cu13/lib");
  copy_runtime (src, dir, site_rt, sizeof (site_rt));
  tree_path (dir, sizeof (dir), "/site");
  setenv ("GST_PINNEDFLOW_CUDART_PATH", dir, 1);
  unsetenv ("GST_PINNEDFLOW_CUDART");

  /* what importing torch does: its libraries need libcudart.so.13 and
   * their rpath finds it in its nvidia/cu13/lib */
  h = dlopen (loaded_rt, RTLD_NOW | RTLD_GLOBAL);
  CHECK_MSG (h != NULL, "dlopen %s: %s", loaded_rt, dlerror ());
  check_mapped (loaded_rt);

  CHECK_INT (pf_cuda_runtime_get (&rt, msg, sizeof (msg)), ==, 0);
  printf ("loaded: %s, functions from the runtime already loaded\n",
      rt->library);
  /* found by its soname through the dynamic linker (step 2) */
  CHECK_MSG (strcmp (rt->library, "libcudart.so.13") == 0, "%s", rt->library);
  check_table_from (rt, loaded_rt);
  check_mapped (loaded_rt);
}

/* ------------------------------------------------------------ python-path */

static int
write_file (const char *path, const char *text)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC), ok;

  if (fd < 0)
    return -errno;
  ok = write (fd, text, strlen (text)) == (ssize_t) strlen (text);
  close (fd);
  return ok ? 0 : -EIO;
}

/* A mount namespace of this process's own (in a user namespace where not
 * root), tmpfs over every /usr/local/cuda* folder. 0, or -errno. */
static int
hide_cuda_folders (void)
{
  uid_t uid = geteuid ();
  gid_t gid = getegid ();
  char map[64];
  glob_t g;
  size_t i;

  if (uid == 0) {
    if (unshare (CLONE_NEWNS) < 0)
      return -errno;
  } else {
    if (unshare (CLONE_NEWUSER | CLONE_NEWNS) < 0)
      return -errno;
    snprintf (map, sizeof (map), "%u %u 1\n", (unsigned) uid, (unsigned) uid);
    if (write_file ("/proc/self/setgroups", "deny") < 0 ||
        write_file ("/proc/self/uid_map", map) < 0)
      return -EPERM;
    snprintf (map, sizeof (map), "%u %u 1\n", (unsigned) gid, (unsigned) gid);
    if (write_file ("/proc/self/gid_map", map) < 0)
      return -EPERM;
  }
  /* (a type, ignored for a propagation change: valgrind reads it) */
  if (mount ("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
    return -errno;
  if (glob ("/usr/local/cuda*", GLOB_NOSORT, NULL, &g) != 0)
    return 0;                   /* nothing to hide */
  for (i = 0; i < g.gl_pathc; i++) {
    struct stat st;

    if (stat (g.gl_pathv[i], &st) < 0 || !S_ISDIR (st.st_mode))
      continue;
    if (mount ("tmpfs", g.gl_pathv[i], "tmpfs", MS_NOSUID | MS_NODEV,
            "size=64k") < 0) {
      int err = -errno;
      globfree (&g);
      return err;
    }
    printf ("hidden: %s\n", g.gl_pathv[i]);
  }
  globfree (&g);
  return 0;
}

/* In a child (before anything of CUDA in this process): does the lookup
 * find a runtime with GST_PINNEDFLOW_CUDART_PATH unset? Its library in
 * @found, else "". */
static void
runtime_visible_elsewhere (char *found, size_t len)
{
  int fds[2], status;
  pid_t pid;
  ssize_t n;

  found[0] = '\0';
  CHECK (pipe (fds) == 0);
  pid = fork ();
  CHECK (pid >= 0);
  if (pid == 0) {
    const pf_cuda_runtime *rt = NULL;
    char msg[2048];

    close (fds[0]);
    unsetenv ("GST_PINNEDFLOW_CUDART_PATH");
    if (pf_cuda_runtime_get (&rt, msg, sizeof (msg)) == 0 &&
        write (fds[1], rt->library, strlen (rt->library)) < 0)
      _exit (2);
    _exit (0);
  }
  close (fds[1]);
  n = read (fds[0], found, len - 1);
  found[n > 0 ? n : 0] = '\0';
  close (fds[0]);
  CHECK (waitpid (pid, &status, 0) == pid);
  CHECK_MSG (WIFEXITED (status) && WEXITSTATUS (status) == 0,
      "the probe child failed (status %d)", status);
}

static void
run_python_path (void)
{
  const char *src = emulator13 ();
  const pf_cuda_runtime *rt = NULL;
  char dir[PATH_MAX], site_rt[PATH_MAX], path[2 * PATH_MAX + 2];
  char visible[PATH_MAX], msg[2048] = "";
  int res;

  make_tree ();
  unsetenv ("GST_PINNEDFLOW_CUDART");
  res = hide_cuda_folders ();
  if (res < 0) {
    printf ("SKIP: no mount namespace to hide /usr/local/cuda* in (%s): the "
        "lookup's last step was not checked\n", strerror (-res));
    remove_tree ();
    exit (77);
  }
  runtime_visible_elsewhere (visible, sizeof (visible));
  if (visible[0] != '\0') {
    printf ("SKIP: with /usr/local/cuda* hidden a CUDA runtime is still "
        "found before GST_PINNEDFLOW_CUDART_PATH (%s: the loader's path or "
        "cache): the lookup's last step was not checked\n", visible);
    remove_tree ();
    exit (77);
  }
  /* the order's last step: an empty site folder first, then one with the
   * runtime where the wheel puts it */
  tree_path (dir, sizeof (dir), "/empty-site");
  CHECK (mkdir (dir, 0700) == 0);
  tree_path (dir, sizeof (dir), "/site/nvidia/cu13/lib");
  copy_runtime (src, dir, site_rt, sizeof (site_rt));
  CHECK ((size_t) snprintf (path, sizeof (path), "%s/empty-site:%s/site",
          tree, tree) < sizeof (path));
  setenv ("GST_PINNEDFLOW_CUDART_PATH", path, 1);
  check_mapped (NULL);
  CHECK_INT (pf_cuda_runtime_get (&rt, msg, sizeof (msg)), ==, 0);
  printf ("python-path: %s\n", rt->library);
  CHECK_MSG (strcmp (rt->library, site_rt) == 0, "opened %s, expected %s",
      rt->library, site_rt);
  check_table_from (rt, site_rt);
  check_mapped (site_rt);
}

/* ------------------------------------------------------------ main */

static const struct
{
  const char *name;
  void (*run) (void);
} cases[] = {
  {"lasterror", run_lasterror}, {"explicit", run_explicit},
  {"loaded", run_loaded}, {"python-path", run_python_path},
};

int
main (int argc, char **argv)
{
  size_t i;

  if (argc != 2) {
    fprintf (stderr, "usage: %s CASE\n", argv[0]);
    return 2;
  }
  setvbuf (stdout, NULL, _IOLBF, 0);
  pf_test_set_fail_handler (fail_exit);
  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    if (strcmp (argv[1], cases[i].name) == 0) {
      cases[i].run ();
      remove_tree ();
      printf ("%s: ok\n", argv[1]);
      return 0;
    }
  }
  fprintf (stderr, "unknown case %s\n", argv[1]);
  return 2;
}
