/* Child processes and temporary directories for the pinnedshm tests.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "shm-proc.h"
#include "pf-test-util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

static GPtrArray *children;
static GPtrArray *dirs;

gchar *
shm_tmpdir_new (void)
{
  gchar *dir = g_dir_make_tmp ("pinnedshm-XXXXXX", NULL);

  g_assert (dir != NULL);
  if (dirs == NULL)
    dirs = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (dirs, g_strdup (dir));
  return dir;
}

static void
child_setup (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

ShmChild *
shm_child_spawn (const gchar * mode, const gchar * socket, ...)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  const gchar *root = g_getenv ("PINNEDFLOW_BUILD_ROOT");
  ShmChild *c = g_new0 (ShmChild, 1);
  GError *err = NULL;
  const gchar *arg;
  va_list ap;

  g_assert (root != NULL);
  g_ptr_array_add (argv, g_build_filename (root, "tests", "shm", "shm-peer",
          NULL));
  g_ptr_array_add (argv, g_strdup (mode));
  g_ptr_array_add (argv, g_strdup ("--socket"));
  g_ptr_array_add (argv, g_strdup (socket));
  va_start (ap, socket);
  while ((arg = va_arg (ap, const gchar *)) != NULL)
      g_ptr_array_add (argv, g_strdup (arg));
  va_end (ap);
  g_ptr_array_add (argv, NULL);

  if (!g_spawn_async_with_pipes (NULL, (gchar **) argv->pdata, NULL,
          G_SPAWN_DO_NOT_REAP_CHILD, child_setup, NULL, &c->pid, NULL,
          &c->out_fd, NULL, &err))
    g_error ("spawn failed: %s", err->message);
  g_ptr_array_unref (argv);
  c->out = g_string_new (NULL);
  if (children == NULL)
    children = g_ptr_array_new ();
  g_ptr_array_add (children, c);
  return c;
}

/* Reads what is there; FALSE at end of file. */
static gboolean
read_some (ShmChild * c, gint timeout_ms)
{
  struct pollfd pfd = { c->out_fd, POLLIN, 0 };
  gchar buf[4096];
  gssize n;

  if (c->out_fd < 0)
    return FALSE;
  if (poll (&pfd, 1, timeout_ms) <= 0)
    return TRUE;
  n = read (c->out_fd, buf, sizeof (buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return TRUE;
  if (n <= 0) {
    close (c->out_fd);
    c->out_fd = -1;
    return FALSE;
  }
  g_string_append_len (c->out, buf, n);
  return TRUE;
}

static const gchar *
find_line (ShmChild * c, const gchar * prefix, guint nth)
{
  const gchar *p = c->out->str;

  while (p && *p) {
    if (g_str_has_prefix (p, prefix) && strchr (p, '\n')) {
      if (nth == 0)
        return p;
      nth--;
    }
    p = strchr (p, '\n');
    if (p)
      p++;
  }
  return NULL;
}

gboolean
shm_child_wait_line (ShmChild * c, const gchar * prefix)
{
  while (find_line (c, prefix, 0) == NULL) {
    if (!read_some (c, 100))
      return find_line (c, prefix, 0) != NULL;
  }
  return TRUE;
}

gint
shm_child_wait (ShmChild * c)
{
  int status;

  while (read_some (c, 100));
  if (!c->reaped) {
    while (waitpid (c->pid, &status, 0) < 0 && errno == EINTR);
    c->reaped = TRUE;
    c->status = WIFEXITED (status) ? WEXITSTATUS (status) : -WTERMSIG (status);
  }
  return c->status;
}

void
shm_child_kill (ShmChild * c, int sig)
{
  if (c->reaped)
    return;
  kill (c->pid, sig);
  if (sig == SIGKILL || sig == SIGTERM)
    shm_child_wait (c);
}

gint64
shm_child_get_nth (ShmChild * c, const gchar * prefix, guint nth,
    const gchar * key)
{
  const gchar *line = find_line (c, prefix, nth), *end, *p;
  gchar *k = g_strdup_printf (" %s=", key);
  gint64 v = -1;

  if (line) {
    end = strchr (line, '\n');
    p = g_strstr_len (line, end - line, k);
    if (p)
      v = g_ascii_strtoll (p + strlen (k), NULL, 10);
  }
  g_free (k);
  return v;
}

gint64
shm_child_get (ShmChild * c, const gchar * prefix, const gchar * key)
{
  return shm_child_get_nth (c, prefix, 0, key);
}

static void
remove_tree (const gchar * path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  const gchar *name;

  if (d) {
    while ((name = g_dir_read_name (d))) {
      gchar *p = g_build_filename (path, name, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_DIR)
          && !g_file_test (p, G_FILE_TEST_IS_SYMLINK))
        remove_tree (p);
      else
        g_unlink (p);
      g_free (p);
    }
    g_dir_close (d);
  }
  g_rmdir (path);
}

void
shm_proc_cleanup (void)
{
  guint i;

  for (i = 0; children && i < children->len; i++) {
    ShmChild *c = g_ptr_array_index (children, i);

    shm_child_kill (c, SIGKILL);
    if (c->out_fd >= 0)
      close (c->out_fd);
    g_spawn_close_pid (c->pid);
    g_string_free (c->out, TRUE);
    g_free (c);
  }
  g_clear_pointer (&children, g_ptr_array_unref);
  for (i = 0; dirs && i < dirs->len; i++)
    remove_tree (g_ptr_array_index (dirs, i));
  g_clear_pointer (&dirs, g_ptr_array_unref);
}

guint
shm_count_fds (void)
{
  int n = pf_test_count_fds ();

  g_assert (n >= 0);
  return (guint) n;
}

gchar *shm_dir;
gchar *shm_sock;

void
shm_setup (void)
{
  shm_dir = shm_tmpdir_new ();
  shm_sock = g_build_filename (shm_dir, "pf.sock", NULL);
}

static GPtrArray *shm_tracked;

void
shm_track_pipeline (GstElement * pipeline)
{
  if (shm_tracked == NULL)
    shm_tracked = g_ptr_array_new ();
  g_ptr_array_add (shm_tracked, pipeline);
}

void
shm_untrack_pipeline (GstElement * pipeline)
{
  if (shm_tracked != NULL)
    g_ptr_array_remove (shm_tracked, pipeline);
}

void
shm_teardown (void)
{
  guint i;

  /* what a failed test left running: stopped (no reference is dropped:
   * the test's own may still be in use by its other objects) */
  for (i = 0; shm_tracked != NULL && i < shm_tracked->len; i++) {
    GstElement *pipeline = g_ptr_array_index (shm_tracked, i);

    GST_WARNING ("test left %" GST_PTR_FORMAT " running: stopped", pipeline);
    gst_element_set_state (pipeline, GST_STATE_NULL);
  }
  if (shm_tracked != NULL)
    g_ptr_array_set_size (shm_tracked, 0);
  shm_proc_cleanup ();
  g_clear_pointer (&shm_sock, g_free);
  g_clear_pointer (&shm_dir, g_free);
}
