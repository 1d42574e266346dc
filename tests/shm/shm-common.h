/* Shared by the pinnedshm tests and their helper program: the frame stamp
 * pattern, and a consumer pipeline that verifies every frame.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __SHM_COMMON_H__
#define __SHM_COMMON_H__

#include <gst/gst.h>
#include <gst/app/gstappsink.h>

G_BEGIN_DECLS

/* Every frame starts with a header; the rest is a pattern of its counter.
 *   k         frame counter of the producer (0, 1, 2...)
 *   clock_pts running time of the PTS + base time of the producer's sink
 *   mono      CLOCK_MONOTONIC ns when the producer pushed it */
#define SHM_STAMP_SIZE 24

void shm_pattern_fill (guint8 * data, gsize size, guint64 k,
    guint64 clock_pts, guint64 mono);
/* Fills a whole (possibly multi-memory) buffer, no merge. */
void shm_pattern_fill_buffer (GstBuffer * buf, guint64 k, guint64 clock_pts,
    guint64 mono);
/* TRUE when every byte after the header matches the counter in it. */
gboolean shm_pattern_check (const guint8 * data, gsize size, guint64 * k,
    guint64 * clock_pts, guint64 * mono);

guint64 shm_monotonic_ns (void);

/* Stamps, in place, every buffer entering @sink (an in-process producer's
 * pinnedshmsink) with the pattern: counter from 0. */
void shm_stamp_sink (GstElement * sink);

typedef struct
{
  guint frames;                 /* verified frames received */
  guint bad;                    /* frames whose bytes did not match */
  guint wrong_size;             /* size not what the caps say */
  guint out_of_order;           /* counter not increasing */
  guint gaps;                   /* counters skipped */
  guint caps_changes;           /* caps seen (first included) */
  guint pinned;                 /* frames all in read-only pinned memory */
  guint ts_checked;             /* frames whose PTS was compared */
  guint ts_bad;                 /* PTS + base != producer clock_pts */
  gboolean eos;
  gboolean error;
  gchar *error_text;
  guint64 first_k, last_k;
  guint64 latency_sum_ns;
  guint offset_ok;              /* GstBuffer offset == producer counter */
  guint duration_ok;            /* duration == 1 / framerate of the caps */
  guint vmeta_ok;               /* video meta matching the caps' layout */
  guint planes_ok;              /* gst_video_frame_map()'s planes hold the
                                 * bytes at the meta's offsets */
  guint max_memories;           /* most memories seen in one buffer */
  guint64 src_frames;           /* frames pinnedshmsrc made (its stats) */
} ShmResult;

typedef struct _ShmConsumer ShmConsumer;

/* pinnedshmsrc socket-path=@socket ... ! appsink; @extra: properties of
 * the source ("on-disconnect=reconnect connect-timeout=-1"), may be NULL.
 * @check_ts: compare each PTS with the producer's stamped clock_pts. */
ShmConsumer *shm_consumer_new (const gchar * socket, const gchar * extra,
    gboolean sync, gboolean check_ts);
GstElement *shm_consumer_get_pipeline (ShmConsumer * c);
GstElement *shm_consumer_get_src (ShmConsumer * c);
gboolean shm_consumer_start (ShmConsumer * c);
/* Pulls and verifies until @n more frames arrived (0: until EOS or error)
 * or @timeout_ms passed with nothing at all; @hold: keep the first @hold
 * samples (never released) instead of dropping them. Returns frames got. */
guint shm_consumer_run (ShmConsumer * c, guint n, gint timeout_ms,
    guint hold);
/* How many of the samples kept by @hold still hold intact frames. */
guint shm_consumer_verify_held (ShmConsumer * c);
/* Frees the samples kept by @hold (their frames go back). */
void shm_consumer_drop_held (ShmConsumer * c);
const ShmResult *shm_consumer_result (ShmConsumer * c);
gchar *shm_result_to_string (const ShmResult * r);
/* Sets the pipeline to NULL and frees everything, held samples included. */
void shm_consumer_free (ShmConsumer * c);

G_END_DECLS
#endif
