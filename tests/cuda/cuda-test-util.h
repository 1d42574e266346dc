/* pinnedflow CUDA tests: helpers shared by test-cuda.c and
 * test-cuda-interop.c (GStreamer side)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The frame pattern (written with padding junk, checked by plane), caps,
 * waiting for EOS or an error, the cudart emulator's query functions, and
 * the producer process of the cross-process tests: the test binary
 * re-executed with --producer, writing the pattern into pinnedshmsink's
 * pinned pool. Built into both executables (tests/cuda/meson.build).
 */
#ifndef __CUDA_TEST_UTIL_H__
#define __CUDA_TEST_UTIL_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcudamemory.h>

G_BEGIN_DECLS
/* ---- frames ---- */
/* The byte at (@plane, @row, @col) of frame @seed. */
    guint8 cuda_test_pattern (guint seed, guint plane, guint row, guint col);
/* Writes frame @seed's pattern into @buf mapped as @info; the row padding
 * gets 0xEE, junk that must not be copied over the frame. FALSE when @buf
 * cannot be mapped for writing. */
gboolean cuda_test_fill_buffer (GstBuffer * buf, const GstVideoInfo * info,
    const GstPinnedCudaLayout * l, guint seed);
/* Wrong bytes in plane @p at @data with @stride (padding ignored). */
guint cuda_test_check_plane (const guint8 * data, gsize stride,
    const GstPinnedCudaLayout * l, guint p, guint seed);
/* Wrong bytes in every plane of a mapped @frame. */
guint cuda_test_check_frame (GstVideoFrame * frame,
    const GstPinnedCudaLayout * l, guint seed);
/* video/x-raw, @format, @w x @h, 30/1. */
GstCaps *cuda_test_make_caps (const gchar * format, gint w, gint h);

/* ---- pipelines ---- */

/* Waits (60 s at most) for EOS or an error; returns the error message
 * (with its debug string), "timeout: ..." or NULL on EOS. Counts the
 * warnings posted meanwhile in *@warnings (optional) and keeps the first
 * one's message in *@warning (optional). */
gchar *cuda_test_wait_eos_or_error_full (GstElement * pipeline,
    guint * warnings, gchar ** warning);
gchar *cuda_test_wait_eos_or_error (GstElement * pipeline);

/* ---- the cudart emulator (libpfemu-cudart.so, tests/cuda/pfemu.h) ---- */

typedef struct
{
  long (*query) (const char *name);
  void (*reset) (void);
  long (*live_total) (void);
  const char *(*leak_report) (void);
} CudaTestEmu;

/* dlopen()s @path (NULL: FALSE) and fills @emu; FALSE when a symbol is
 * missing. */
gboolean cuda_test_emu_load (CudaTestEmu * emu, const gchar * path);

/* ---- CUDA's process rule ---- */

/* gst-check forks a child per test (unless CK_FORK=no), and a process
 * forked after CUDA was initialised in its parent cannot use CUDA: a test
 * main() must not initialise it. What main() must learn from CUDA (is
 * there a device, what does the element offer) it asks here: @probe runs
 * in a child process of its own, which exits after it. Returns FALSE (with
 * *@answer the reason) when the child could not run or died; else TRUE and
 * *@answer what @probe returned (NULL or a string, to g_free). On a real
 * runtime (@emu NULL) where libcuda.so is already loaded in this process
 * (CUDA may be initialised: a child could not use it), @probe runs here,
 * and cuda_test_check_fork() then keeps the suite from forking. */
gboolean cuda_test_probe_in_child (gchar * (*probe) (void),
    const CudaTestEmu * emu, gchar ** answer);
/* Call just before gst_check_run_suite: TRUE when the suite may fork its
 * tests. With the emulator (@emu not NULL), FALSE (said on stderr) when
 * it says CUDA was initialised in this process: a test main() did what it
 * must not. On a real runtime, where nothing says so, libcuda.so mapped in
 * this process (a registry scan in-process loaded nvcodec, which calls
 * cuInit) makes the suite run without forking (CK_FORK=no, said on
 * stdout), the one way its tests can still use CUDA; TRUE. */
gboolean cuda_test_check_fork (const gchar * suite, const CudaTestEmu * emu);
/* Loads each plugin feature named in @names (NULL-terminated) that is
 * registered, in this process: what a plugin_init does with CUDA (nvcodec
 * probes each device) happens then, in the test's own process (a checked
 * fixture's setup runs in the test's child), before counters are reset. */
void cuda_test_load_features (const gchar * const *names);

/* ---- the producer process ---- */

/* Starts this binary again as a producer (see cuda_test_producer_main):
 * @n frames of @format at @w x @h into a pinnedshmsink on @sock. */
gboolean cuda_test_spawn_producer (const gchar * sock, const gchar * format,
    gint w, gint h, guint n, GPid * pid, GError ** error);
/* Call first in main(): when @argv is a producer's command line, runs the
 * producer (gst_init() included) and returns its exit status (0: every frame
 * pushed and EOS reached; 1: the pipeline's error; 2: no pipeline; 3: no
 * usable pool from pinnedshmsink); else -1. */
int cuda_test_producer_main (int argc, char **argv);

G_END_DECLS
#endif /* __CUDA_TEST_UTIL_H__ */
