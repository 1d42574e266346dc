/* shm-bench's "node" transport (issue 35): the C node API's hop,
 * pf_node_producer -> pf_node_consumer (pf_producer and pf_consumer under
 * them), no GStreamer on either side.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Producer (a process of its own, shm-bench --role produce --impl node):
 * a pool of pool-size slots of one frame; each frame is loaned, its frame
 * number and CLOCK_MONOTONIC time written in place (the 16 bytes every
 * producer of shm-bench writes), published from the pacing thread. Not
 * live, so the consumer gets every frame (as the GStreamer pair here).
 * Consumer (a thread of shm-bench, node_receive()): blocks in
 * pf_node_consumer_next() until a frame is there, stamps it, releases it.
 * Threads: the producer process has its pacing thread and pf_producer's
 * I/O thread; the consumer side has node_receive()'s thread only (and
 * shm-bench's main thread, asleep until the last frame).
 */
#include <errno.h>
#include <string.h>

#include <pinnedflow/pf-node.h>

#include "shm-bench.h"

int
node_produce (const gchar * socket, gint w, gint h, gint frames, gint rate,
    gboolean paced, gint pool_size)
{
  pf_node_producer_config config = { 0, };
  pf_node_producer *p = NULL;
  guint64 t0, period = 1000000000u / (guint) MAX (rate, 1);
  gint k, res;

  config.socket_path = socket;
  config.n_slots = (guint) MAX (pool_size, 1);
  config.slot_size = (guint64) w *h * 4;
  if ((res = pf_node_producer_new (&config, &p)) < 0
      || (res = pf_node_producer_set_video (p, "RGBA", w, h, 0, 1)) < 0
      || (res = pf_node_producer_wait_clients (p, 1, 30000)) < 0)
    g_error ("node producer: %s", pf_node_strerror (res));

  bench_producer_start ();
  t0 = bench_now_ns () + 100 * 1000000u;
  for (k = 0; k < frames; k++) {
    pf_node_loan loan;
    guint64 stamp[2];

    if ((res = pf_node_producer_loan_video (p, -1, &loan)) < 0)
      break;
    if (paced)
      bench_sleep_until (t0 + k * period);
    stamp[0] = (guint64) k;
    stamp[1] = bench_now_ns ();
    memcpy (loan.data, stamp, sizeof (stamp));
    if (pf_node_producer_publish (p, &loan) < 0)
      break;
  }
  /* the consumer stops at its count; the producer goes with the process */
  return bench_producer_report_and_exit (socket);
}

gpointer
node_receive (gpointer data)
{
  Probe *p = data;
  pf_node_consumer *c = NULL;
  gint res;

  if (!bench_wait_socket (p->sock, p->pid))
    return NULL;
  res = pf_node_consumer_new_with (p->sock, 10000, PF_DELIVERY_EVERY_FRAME, &c);
  if (res < 0) {
    g_printerr ("node consumer: %s\n", pf_node_strerror (res));
    return NULL;
  }
  for (;;) {
    pf_node_frame *f = NULL;
    guint64 stamp[2] = { 0, 0 }, t;

    /* 2 s without a frame ends the run, as for every transport */
    res = pf_node_consumer_next (c, 2000, &f);
    if (res != 1)
      break;
    t = bench_now_ns ();
    if (f->n_chunks == 1 && f->size >= sizeof (stamp)) {
      memcpy (stamp, f->data, sizeof (stamp));
      probe_record (p, t, stamp[1]);
    }
    pf_node_frame_release (f);
    if (stamp[0] + 1 >= (guint64) p->want)
      break;
  }
  pf_node_consumer_free (c);
  return NULL;
}
