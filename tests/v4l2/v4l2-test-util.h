/* Helpers shared by test-v4l2.c and test-v4l2-dmabuf.c: the consumer
 * process (v4l2-consumer) and its RESULT line, the pipeline's end, the
 * sink's counters.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threading: the test's thread only. Failures are check assertions.
 */
#ifndef __V4L2_TEST_UTIL_H__
#define __V4L2_TEST_UTIL_H__

#include <gst/gst.h>

G_BEGIN_DECLS
/* A case's temporary directory (from @tmpl) and *@sock "pf.sock" in it. */
void v4l2_test_setup (const gchar * tmpl, gchar ** tmpdir, gchar ** sock);
/* The end of a case: *@running (the pipeline a failed assertion left
 * running, may be NULL) stopped and dropped, the socket and the directory
 * removed and both freed. */
void v4l2_test_teardown (GstElement ** running, gchar ** tmpdir, gchar ** sock);

/* The value of " @key=N" in @line, or -1 without one. */
gint64 v4l2_test_get_key (const gchar * line, const gchar * key);

/* Spawns v4l2-consumer @sock @extra... (NULL-ended, may be NULL), its
 * stdout on *@out_fd. */
GPid v4l2_test_spawn_consumer (const gchar * sock, gchar ** extra,
    gint * out_fd);

/* Waits (60 s) for @pipe's EOS or error; an error fails the test unless
 * @error_ok, then it is returned in *@error and the consumer killed. Then
 * reaps the consumer and returns its RESULT line ("" where an error left
 * none; no line and no error fails). @what names the run in the log. */
gchar *v4l2_test_finish (GstElement * pipe, GPid pid, gint out_fd,
    gboolean error_ok, gchar ** error, const gchar * what);

/* The sink's stats: frames, copies, zero-copy-frames. */
void v4l2_test_sink_stats (GstElement * sink, guint64 * frames,
    guint64 * copies, guint64 * zero_copy);

G_END_DECLS
#endif
