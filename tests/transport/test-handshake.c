/* pinnedflow transport: the consumer's handshake against peers that do not
 * behave (silent, hanging up, short, wrong first message, cancelled)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (docs/protocol.md, "Connecting"): pf_consumer_connect*() ends by
 * its deadline whatever the peer does, every failure returns a distinct code
 * with a sentence that names what happened (valid UTF-8, no uninitialised
 * text), and nothing is left open. A peer that accepts and never says HELLO
 * gives -ETIME ("accepted the connection but sent no HELLO within N ms"),
 * nobody listening gives -ETIMEDOUT. Durations are checked against the
 * deadline with a generous margin (2 s): the point is that the deadline is
 * respected, not how precisely.
 */
#include "harness.h"
#include "pf-test-util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MARGIN_MS 2000

static int64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 when @s is valid UTF-8 (and not empty). */
static int
valid_utf8 (const char *s)
{
  const unsigned char *p = (const unsigned char *) s;

  if (*p == '\0')
    return 0;
  while (*p) {
    int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ?
        2 : (*p & 0xf8) == 0xf0 ? 3 : -1;

    if (n < 0)
      return 0;
    for (p++; n > 0; n--, p++)
      if ((*p & 0xc0) != 0x80)
        return 0;
  }
  return 1;
}

#define CHECK_ERROR_TEXT(needle) do { \
    const char *_e = pf_consumer_connect_error (); \
    CHECK (valid_utf8 (_e)); \
    if (strstr (_e, (needle)) == NULL) { \
      fprintf (stderr, "error text \"%s\" lacks \"%s\"\n", _e, (needle)); \
      t_fail (); \
    } \
  } while (0)

/* A listening socket at @path whose connections nobody reads: the kernel
 * completes them into the backlog, so a connect succeeds and then hears
 * nothing. */
static int
silent_listener (const char *path, int backlog)
{
  struct sockaddr_un addr = {.sun_family = AF_UNIX };
  int lfd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

  CHECK (lfd >= 0);
  CHECK (strlen (path) < sizeof (addr.sun_path));
  strcpy (addr.sun_path, path);
  CHECK_INT (bind (lfd, (struct sockaddr *) &addr, sizeof (addr)), ==, 0);
  CHECK_INT (listen (lfd, backlog), ==, 0);
  return lfd;
}

/* A child that accepts every connection and keeps it open, silent, until
 * killed: the stand-in producer of issue 8. */
static int
silent_server (void *arg)
{
  int lfd = *(int *) arg;

  for (;;)
    if (accept4 (lfd, NULL, NULL, SOCK_CLOEXEC) < 0)
      pf_test_sleep_ms (1);
  return 0;
}

/* A socketpair whose other end we keep: the consumer side goes to
 * pf_consumer_new_from_fd(). */
static void
pair (int sv[2])
{
  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
}

/* Connects with @timeout_ms and expects -ETIME from a silent peer, in time,
 * with a sentence naming it, nothing left open. */
static void
expect_silent (const char *path, int timeout_ms)
{
  pf_consumer *c = (pf_consumer *) 0x1;
  int64_t t0, dt;
  int hello_ms;
  int fds0 = t_count_fds ();

  t0 = now_ms ();
  CHECK_INT (pf_consumer_connect (path, timeout_ms, &c), ==, -ETIME);
  dt = now_ms () - t0;
  CHECK (c == NULL);
  /* the deadline is respected: not before it, not much after it */
  CHECK_INT (dt, >=, timeout_ms - 5);
  CHECK_INT (dt, <, timeout_ms + MARGIN_MS);
  /* the wait it names is what was left of the deadline after connecting */
  CHECK_ERROR_TEXT ("accepted the connection but sent no HELLO within ");
  hello_ms = atoi (strstr (pf_consumer_connect_error (), "within ") + 7);
  CHECK_INT (hello_ms, >, 0);
  CHECK_INT (hello_ms, <=, timeout_ms);
  CHECK_ERROR_TEXT (path);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* The reproduction: a producer that accepts and never speaks. */
static void
test_silent_deadline (void)
{
  int lfd = silent_listener (t_path ("sock"), 8);
  pid_t pid = t_spawn (silent_server, &lfd);

  expect_silent (t_path ("sock"), 300);
  expect_silent (t_path ("sock"), 1000);
  kill (pid, SIGKILL);
  t_wait (pid);
  close (lfd);
}

/* Connections queued in a backlog nobody accepts look the same. */
static void
test_silent_backlog (void)
{
  int lfd = silent_listener (t_path ("sock"), 8);

  expect_silent (t_path ("sock"), 200);
  close (lfd);
}

/* Nobody listening is told apart from a silent peer. */
static void
test_nobody_listening (void)
{
  pf_consumer *c;
  int64_t t0, dt;

  t0 = now_ms ();
  CHECK_INT (pf_consumer_connect (t_path ("none"), 200, &c), ==, -ETIMEDOUT);
  dt = now_ms () - t0;
  CHECK (c == NULL);
  CHECK_INT (dt, <, 200 + MARGIN_MS);
  CHECK_ERROR_TEXT ("no producer at");
}

/* 50 connects in a row to a silent producer, 100 ms each: every one ends
 * with the same clean error by its deadline, nothing accumulates (run under
 * valgrind by the valgrind setup). */
static void
test_silent_loop (void)
{
  int lfd = silent_listener (t_path ("sock"), 64);
  pid_t pid = t_spawn (silent_server, &lfd);
  int i, fds0 = t_count_fds ();

  for (i = 0; i < 50; i++)
    expect_silent (t_path ("sock"), 100);
  CHECK_INT (t_count_fds (), ==, fds0);
  kill (pid, SIGKILL);
  t_wait (pid);
  close (lfd);
}

/* pf_consumer_new_from_fd(): a silent peer, then one whose HELLO is
 * already queued with no time to wait at all. */
static void
test_from_fd_timeout (void)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  pf_consumer *c;
  int sv[2], fds0 = t_count_fds ();
  int64_t t0, dt;

  pair (sv);
  t0 = now_ms ();
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 150, &c), ==, -ETIME);
  dt = now_ms () - t0;
  CHECK_INT (dt, <, 150 + MARGIN_MS);
  CHECK_ERROR_TEXT ("sent no HELLO within 150 ms");
  /* it took the fd and closed it: our end sees the hang-up */
  CHECK_INT (pf_test_wait_hangup (sv[1], 30000), ==, 1);
  close (sv[1]);
  CHECK_INT (t_count_fds (), ==, fds0);

  /* 0: only what is queued */
  pair (sv);
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 0, &c), ==, -ETIME);
  CHECK_ERROR_TEXT ("sent no HELLO within 0 ms");
  close (sv[1]);
  pair (sv);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_hello (buf,
              PF_ROLE_PRODUCER, 2, 7), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 0, &c), ==, 0);
  CHECK_INT (pf_consumer_get_session_id (c), ==, 7);
  pf_consumer_unref (c);
  close (sv[1]);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* A peer that hangs up before its HELLO: at once, not at the deadline. */
static void
test_hangup (void)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  pf_consumer *c;
  int sv[2], res, fds0 = t_count_fds ();
  int64_t t0;

  /* closed before we even said HELLO */
  pair (sv);
  close (sv[1]);
  t0 = now_ms ();
  res = pf_consumer_new_from_fd (sv[0], 20000, &c);
  CHECK (res == -EPIPE || res == -ECONNRESET);
  CHECK_INT (now_ms () - t0, <, MARGIN_MS);
  CHECK_ERROR_TEXT ("the producer closed the connection before its HELLO");

  /* reads our HELLO, then closes */
  pair (sv);
  CHECK_INT (shutdown (sv[1], SHUT_WR), ==, 0);
  res = pf_consumer_new_from_fd (sv[0], 20000, &c);
  CHECK_INT (res, ==, -EPIPE);
  CHECK_ERROR_TEXT ("closed the connection before its HELLO");
  CHECK_INT (recv (sv[1], buf, sizeof (buf), 0), ==, 40);
  close (sv[1]);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* A first packet shorter than a header, or of the wrong type (with an fd,
 * which must be closed). */
static void
test_bad_first_message (void)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  pf_consumer *c;
  int sv[2], mfd, fds0 = t_count_fds ();

  pair (sv);
  CHECK_INT (pf_test_send_fds (sv[1], "abc", 3, NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 20000, &c), ==, -EPROTO);
  CHECK_ERROR_TEXT ("bad HELLO from the producer");
  close (sv[1]);

  pair (sv);
  mfd = pf_test_memfd (4096, 1);
  CHECK (mfd >= 0);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_segment_add (buf, 1,
              4096), &mfd, 1), ==, 0);
  close (mfd);
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 20000, &c), ==, -EPROTO);
  CHECK_ERROR_TEXT ("is not a producer HELLO");
  close (sv[1]);

  /* a consumer HELLO is not a producer's */
  pair (sv);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_hello (buf,
              PF_ROLE_CONSUMER, 0, 0), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 20000, &c), ==, -EPROTO);
  close (sv[1]);
  /* every fd received was closed */
  CHECK_INT (t_count_fds (), ==, fds0);
}

typedef struct
{
  const char *path;
  int cancel_fd, timeout_ms, res;
  pf_consumer *c;
  char error[256];
} call;

static void *
connect_thread (void *data)
{
  call *k = data;

  k->res = pf_consumer_connect_cancellable (k->path, k->timeout_ms,
      k->cancel_fd, &k->c);
  snprintf (k->error, sizeof (k->error), "%s", pf_consumer_connect_error ());
  return NULL;
}

/* Cancelling the wait for the HELLO of a silent peer, long before the
 * deadline. */
static void
test_cancel_hello (void)
{
  int lfd = silent_listener (t_path ("sock"), 8);
  call k = {.path = t_path ("sock"),.timeout_ms = 60000 };
  uint64_t one = 1;
  pthread_t t;
  int64_t t0;
  int fds0;

  k.cancel_fd = eventfd (0, EFD_CLOEXEC);
  CHECK (k.cancel_fd >= 0);
  fds0 = t_count_fds ();
  t0 = now_ms ();
  CHECK_INT (pthread_create (&t, NULL, connect_thread, &k), ==, 0);
  t_sleep_ms (100);
  CHECK_INT (write (k.cancel_fd, &one, sizeof (one)), ==, sizeof (one));
  pthread_join (t, NULL);
  CHECK_INT (k.res, ==, -ECANCELED);
  CHECK (k.c == NULL);
  CHECK_INT (now_ms () - t0, <, 60000);
  CHECK (valid_utf8 (k.error));
  CHECK (strstr (k.error, "cancelled") != NULL);
  CHECK_INT (t_count_fds (), ==, fds0);
  close (k.cancel_fd);
  close (lfd);
}

static const t_case cases[] = {
  {"silent-deadline", test_silent_deadline},
  {"silent-backlog", test_silent_backlog},
  {"nobody-listening", test_nobody_listening},
  {"silent-loop", test_silent_loop},
  {"from-fd-timeout", test_from_fd_timeout},
  {"hangup", test_hangup},
  {"bad-first-message", test_bad_first_message},
  {"cancel-hello", test_cancel_hello},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
