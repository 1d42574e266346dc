/* shm-bench's pieces (bench/shm/shm-bench.c: the GStreamer transports,
 * the floor, the tables; shm-bench-node.c: the C node API's hop;
 * shm-bench-roudi.c: iceoryx's rows and RouDi): what they share.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __SHM_BENCH_H__
#define __SHM_BENCH_H__

#include <signal.h>

#include <glib.h>

#include "bench-wakeups.h"

/* latency samples left out at the start of each run */
#define WARMUP 10

/* One run of one transport. */
typedef struct
{
  double fps;
  double p50_us, p99_us;
  guint frames;
  /* CPU time per frame (user + sys), us; < 0 when not measured */
  double cpu_prod_us, cpu_cons_us;
  /* context switches per frame, every thread of the process (voluntary:
   * the wake-ups; csw: voluntary + nonvoluntary); < 0 when not measured */
  double wake_prod, csw_prod, wake_cons, csw_cons;
  /* the same thread by thread ("name vol/invol, ..." per frame) */
  gchar threads_prod[320], threads_cons[320];
  /* iceoryx: RouDi's CPU (us) and wake-ups per frame over the run */
  double cpu_roudi_us, wake_roudi;
} Result;

/* The consumer's record of a run, filled by whichever thread receives. */
typedef struct
{
  guint64 *lat;
  guint n, want;
  guint64 t_first, t_last;
  guint64 cpu_first, cpu_last;
  /* context switches at the first frame and at the last */
  bw_count cs_first, cs_last;
  bw_snap snap_first, snap_last;
  GMutex lock;
  GCond cond;
  /* the floor's and the node API's receiving thread */
  const gchar *sock;
  GPid pid;
} Probe;

guint64 bench_now_ns (void);
guint64 bench_cpu_ns (void);
void bench_sleep_until (guint64 t);
/* A frame sent at @sent (CLOCK_MONOTONIC ns) arrived at @t. */
void probe_record (Probe * p, guint64 t, guint64 sent);
gboolean bench_wait_socket (const gchar * path, GPid pid);
/* The producer's end: waits for SIGUSR1, writes its CPU time and context
 * switches since bench_producer_start() to SOCKET.cpu, exits. */
void bench_producer_start (void);
int bench_producer_report_and_exit (const gchar * socket);
/* Reads a producer's SOCKET.cpu (or iceoryx's publisher's file) into
 * @res, per frame of @frames. FALSE if it is not there. */
gboolean bench_read_side (const gchar * path, guint frames, Result * res);

/* shm-bench-tables.c */
#define MAX_ROUNDS 9
typedef Result (*bench_run_fn) (const gchar * impl, gint w, gint h,
    gboolean paced, gint fps, GArray * samples);
typedef struct
{
  const gchar *impl, *name;
  gboolean on;
  /* why not, when !on */
  const gchar *off_reason;
} BenchImpl;
/* The rounds of one transport: the median round (its p99 over the frames
 * of all rounds), the smallest and largest p50 of the rounds. */
typedef struct
{
  Result med;
  double p50_min, p50_max;
  gint rounds;                  /* rounds with frames */
} Row;
void bench_rounds (bench_run_fn run, const BenchImpl * impls, guint n_impls,
    gint w, gint h, gint fps, gint rounds, gboolean by_cpu, Row * rows);
void print_size_header (void);
void print_size_rows (const gchar * size, const BenchImpl * impls,
    guint n_impls, const Result * tp, const Row * rows, guint shm, guint flr,
    double memcpy_us, guint want);
void print_ratio (const gchar * size, const gchar * what, const Result * tpa,
    const Row * a, const Result * tpb, const Row * b);
void print_wake_table (const BenchImpl * impls, guint n_impls,
    const Row * rows, guint shm, guint flr);

/* shm-bench-producer.c: the producer process of a GStreamer pair or of
 * the floor, from shm-bench --role produce */
typedef struct
{
  const gchar *impl, *socket;
  gint width, height, frames, rate, pool_size;
  gboolean paced, appsrc;
} ProducerArgs;
int gst_produce (const ProducerArgs * a);
int floor_produce (const ProducerArgs * a);
/* the floor's consumer, a thread of this process (@data a Probe) */
gpointer floor_receive (gpointer data);
/* SIGUSR1: the consumer has its frames; main() installs it and blocks
 * SIGUSR1 (the mask before is prod_unblocked) */
void on_sigusr1 (int sig);
extern sigset_t prod_unblocked;

/* shm-bench-node.c: the node API's producer process, and its consumer (a
 * thread of this process, @data a Probe) */
int node_produce (const gchar * socket, gint w, gint h, gint frames,
    gint rate, gboolean paced, gint pool_size);
gpointer node_receive (gpointer data);

/* shm-bench-roudi.c: TRUE when the iceoryx rows can run (RouDi started,
 * its config sized for 3840x2160 RGBA); else @reason says why not. */
gboolean iox_start (const gchar * self, gchar ** reason);
/* One iceoryx run, as run_transport() makes one of ours. */
Result iox_run (gint w, gint h, gboolean paced, gint fps, gint frames,
    GArray * samples);
/* Stops RouDi and removes what it left in /dev/shm (also at exit). */
void iox_stop (void);

#endif /* __SHM_BENCH_H__ */
