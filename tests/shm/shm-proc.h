/* Child processes and temporary socket directories for the pinnedshm
 * tests: children die with the test (PR_SET_PDEATHSIG) and are killed in
 * teardown; directories are removed.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __SHM_PROC_H__
#define __SHM_PROC_H__

#include <glib.h>
#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct
{
  GPid pid;
  gint out_fd;
  GString *out;
  gboolean reaped;
  gint status;                  /* exit code, or -signal */
} ShmChild;

/* A new private directory; shm_proc_cleanup() removes it. */
gchar *shm_tmpdir_new (void);
/* The common fixture of the shm test files, for
 * tcase_add_checked_fixture (tc, shm_setup, shm_teardown): shm_dir a new
 * private directory, shm_sock "pf.sock" in it; the teardown runs
 * shm_proc_cleanup() (children, directories) and frees both (NULL between
 * tests). */
extern gchar *shm_dir;
extern gchar *shm_sock;
void shm_setup (void);
void shm_teardown (void);

/* A pipeline of the test process that a failed assertion would leave
 * running: the teardown sets each one still tracked to NULL. (With
 * CK_FORK=no, as under valgrind, a failure jumps out of the test; a
 * source's task left paused then hangs the next gst_task_cleanup_all(),
 * and the failure would show only as the suite's timeout.) Untrack it
 * where the test ends it itself. Takes no reference. */
void shm_track_pipeline (GstElement * pipeline);
void shm_untrack_pipeline (GstElement * pipeline);

/* Spawns the helper "shm-peer @mode --socket @socket ARGS...", NULL-ended. */
ShmChild *shm_child_spawn (const gchar * mode, const gchar * socket, ...)
    G_GNUC_NULL_TERMINATED;
/* Reads output until a line starting with @prefix arrives (TRUE), or the
 * child ends (FALSE). */
gboolean shm_child_wait_line (ShmChild * c, const gchar * prefix);
/* Reads all output and reaps the child; returns its status. */
gint shm_child_wait (ShmChild * c);
void shm_child_kill (ShmChild * c, int sig);
/* The value of key=VALUE on the first output line starting with @prefix
 * (the n-th such line for shm_child_get_nth), or -1. */
gint64 shm_child_get (ShmChild * c, const gchar * prefix, const gchar * key);
gint64 shm_child_get_nth (ShmChild * c, const gchar * prefix, guint nth,
    const gchar * key);

/* Kills and reaps every child still running, frees them, removes the
 * directories. */
void shm_proc_cleanup (void);

/* Open fds of this process. */
guint shm_count_fds (void);

G_END_DECLS
#endif
