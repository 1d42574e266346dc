/* The launch peers of the pinnedshm tests: producers and consumers as gst
 * pipelines in "shm-peer launch" children (see shm-peer.c), and the checks
 * of the frames they printed (index, PTS, duration, flags, SHA-1 of the
 * bytes). Checks fail the running test (libcheck).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __SHM_LAUNCH_H__
#define __SHM_LAUNCH_H__

#include <glib.h>

#include "shm-proc.h"

G_BEGIN_DECLS

#define SHM_LAUNCH_CAPS \
  "video/x-raw,format=RGBA,width=160,height=120,framerate=30/1"

/* One FRAME line of a launch child. */
typedef struct
{
  guint64 index;
  gint64 pts, dur;
  guint flags;
  gchar sum[41];
} ShmFrame;

/* The FRAME lines @c printed, in order (an array of ShmFrame). */
GArray *shm_frames_of (ShmChild * c);
/* What @c printed but its frames, at most 1500 bytes, for failure
 * messages. Leaked: failures only. */
const gchar *shm_said (ShmChild * c);
/* The number of lines of @c starting with @prefix and holding @needle
 * (NULL: any). */
guint shm_count_lines (ShmChild * c, const gchar * prefix,
    const gchar * needle);

/* Every frame of @got is the source's frame with the same PTS (@by_sum:
 * found by its bytes, PTS not compared), byte for byte, with its duration,
 * in increasing order; returns the index in @src of its first frame (-1
 * when it got none). shm_check_subset: by PTS. */
gint shm_check_frames (GArray * src, GArray * got, gboolean by_sum,
    const gchar * who);
gint shm_check_subset (GArray * src, GArray * got, const gchar * who);
/* @got is exactly @src from index @from on. */
void shm_check_all_from (GArray * src, GArray * got, guint from,
    const gchar * who);

/* shm-peer launch --socket shm_sock --pipeline @pipeline (@SOCKET@ in it
 * replaced), then up to 6 more arguments, NULL-ended. */
ShmChild *shm_spawn_launch (const gchar * pipeline, ...)
    G_GNUC_NULL_TERMINATED;
/* A producer of @n frames: videotestsrc (is-live=@live) ! CAPS ! tap !
 * pinnedshmsink name=sink @sink_props, waiting in PAUSED for @clients;
 * returns once it printed PAUSED. */
ShmChild *shm_spawn_producer (gint n, gboolean live, guint clients,
    const gchar * sink_props, const gchar * extra_arg,
    const gchar * extra_val);
/* A consumer: pinnedshmsrc name=src connect-timeout=-1 @src_props
 * [! identity sleep-time=@sleep_us] ! fakesink name=tap; @hold: buffers
 * kept at the tap. */
ShmChild *shm_spawn_consumer (const gchar * src_props, guint sleep_us,
    const gchar * hold);

/* Reaps @c, which must exit 0 at EOS with no error. */
void shm_wait_ok (ShmChild * c, const gchar * who);
/* Reaps the producer @p (exit 0 at EOS) and returns the @n frames it
 * listed. */
GArray *shm_producer_frames (ShmChild * p, gint n);
/* Reaps the consumer @c (exit 0 at EOS), which got every frame of @src. */
void shm_check_got_all (GArray * src, ShmChild * c, const gchar * who);

G_END_DECLS
#endif
