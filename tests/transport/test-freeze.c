/* pinnedflow tests: nothing a peer controls can make our side block (issue 26)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (docs/design.md, "The frame ring"; docs/protocol.md, 3.10 and
 * the threat model): no read or write on an fd a peer shares may block, in
 * either direction, whatever the peer does with the flags of its end.
 *
 * Each peer below is written from docs/protocol.md as an attacker would:
 * it clears O_NONBLOCK (fcntl (F_SETFL, 0)) on every fd it got or gave, then
 * fills the other side's doorbell or takes a ring back between the other
 * side's wake-up and its read. On b0e183f (eventfd doorbells, whose open
 * file description both sides share) each case hangs the victim: the
 * producer for good, with its lock held (no frames, no HELLO, SIGINT
 * ignored), or the consumer in pf_consumer_receive ()/_release (). The
 * cases measure with deadlines and end by themselves either way.
 *
 * Processes: a case runs in a forked child (harness.c); the producer under
 * attack and the attacking consumer are processes of their own
 * (t_spawn (), killed at the end of the case), so that a hung one can be
 * seen hung and killed; the hostile producer of the last case is the case
 * itself, the consumer under attack a thread of it.
 */
#include "harness.h"
#include "pf-test-util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEG_SIZE 4096u
#define N_SLOTS 8u

static uint64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* ---- the producer under attack: a process of its own ---- */

/* A live producer (every consumer newest frame by default, so the
 * publisher waits for nobody) publishing a frame every 5 ms until SIGINT;
 * then it stops its publisher, closes the producer and exits 0. Stuck, it
 * never exits: the case measures how long SIGINT takes. */
struct producer_args
{
  const char *path;
};

static atomic_int publisher_quit;

struct publisher
{
  t_producer *tp;
  pf_segment *seg;
};

static void *
publisher_thread (void *data)
{
  struct publisher *pub = data;
  uint64_t i;

  for (i = 1; !atomic_load (&publisher_quit); i++) {
    t_publish (pub->tp, pub->seg, (i % N_SLOTS) * SEG_SIZE, SEG_SIZE, i);
    t_sleep_ms (5);
  }
  return NULL;
}

static int
producer_main (void *data)
{
  struct producer_args *a = data;
  pf_producer_config cfg;
  struct publisher pub;
  t_producer tp;
  pthread_t th;
  sigset_t set;
  int sig;

  /* SIGINT is taken by sigwait () below: blocked in every thread, the
   * producer's included (they inherit the mask) */
  sigemptyset (&set);
  sigaddset (&set, SIGINT);
  pthread_sigmask (SIG_BLOCK, &set, NULL);
  memset (&cfg, 0, sizeof (cfg));
  cfg.live = 1;
  if (t_producer_start_config (&tp, a->path, 4, &cfg) != 0)
    return 2;
  pf_producer_set_caps (tp.p, "video/x-raw");
  if (pf_segment_new ("t", SEG_SIZE * N_SLOTS, 0, &pub.seg) != 0)
    return 3;
  pub.tp = &tp;
  pthread_create (&th, NULL, publisher_thread, &pub);
  sigwait (&set, &sig);
  /* what a pipeline going to NULL does: the streaming thread stops, the
   * producer closes */
  atomic_store (&publisher_quit, 1);
  pthread_join (th, NULL);
  t_producer_stop (&tp);
  pf_segment_unref (pub.seg);
  return 0;
}

/* ---- the attacker: a consumer written from docs/protocol.md ---- */

enum attack
{
  ATTACK_FILL,                  /* fill the frame doorbell, then release */
  ATTACK_RACE,                  /* ring the release doorbell, take it back */
};

struct attacker_args
{
  const char *path;
  int ready_fd;                 /* written once the ring is ours */
  enum attack mode;
};

/* Clears O_NONBLOCK on the open file description behind @fd. */
static void
make_blocking (int fd)
{
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
}

static int
is_socket (int fd)
{
  struct stat st;

  return fstat (fd, &st) == 0 && S_ISSOCK (st.st_mode);
}

/* Fills @bell as far as its kind lets a consumer: an eventfd to
 * 0xfffffffffffffffe (the producer's next write of 1 would overflow it),
 * a socket end with everything it takes (the producer's end does not read
 * it: this only hurts us). */
static void
fill_doorbell (int bell)
{
  uint8_t junk[4096];
  int k;

  if (is_socket (bell)) {
    memset (junk, 1, sizeof (junk));
    while (send (bell, junk, sizeof (junk), MSG_DONTWAIT | MSG_NOSIGNAL) > 0);
    return;
  }
  for (k = 0; k < 1000; k++) {
    uint64_t v, big = 0xfffffffffffffffeull;

    while (read (bell, &v, sizeof (v)) > 0);    /* still non-blocking */
    if (write (bell, &big, sizeof (big)) == sizeof (big))
      return;
  }
}

static void
ring_bell (int bell)
{
  uint64_t one = 1;

  if (is_socket (bell))
    send (bell, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  else if (write (bell, &one, sizeof (one)) < 0) {
    /* an overflowing count: rung anyway */
  }
}

/* RACE: a thread of the attacker that takes every ring of the release
 * doorbell back: it waits in a blocking read (), woken by the same ring as
 * the producer's epoll_wait (). When the producer's epoll_wait () checked
 * the doorbell readable before this read () emptied it, the producer's own
 * read () that follows waits, with its lock held, until the next ring; and
 * no more rings come, since the producer, stuck, sends no more frames to
 * release. It ends where there is nothing to take (a socket end the
 * producer only reads: end of file). */
static void *
steal_thread (void *data)
{
  int bell = *(int *) data;
  uint64_t v;

  while (read (bell, &v, sizeof (v)) > 0);
  return NULL;
}

static int
attacker_main (void *data)
{
  struct attacker_args *a = data;
  uint8_t buf[PF_MAX_MSG_SIZE];
  int fds[64], n_fds = 0, got[16], n_got, i, fd;
  int memfd = -1, bell = -1, relbell = -1;
  uint32_t n_entries = 0;
  struct pf_frame_ring *ring;
  struct pf_release_ring *rel;
  uint64_t *rel_seqs, r = 0, rel_w = 0;
  const struct pf_msg_frame *entries;
  ssize_t len;

  fd = pf_test_connect (a->path);
  if (fd < 0)
    return 2;
  /* HELLO (section 3.1): header, magic, version, role consumer, flags
   * newest frame | FRAME_RING */
  memset (buf, 0, 40);
  pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  t_put32 (buf, 28, PF_DELIVERY_NEWEST_FRAME | PF_HELLO_FRAME_RING);
  if (send (fd, buf, 40, MSG_NOSIGNAL) != 40)
    return 3;
  /* the producer's HELLO, then FRAME_RING (section 4): every fd kept */
  while (memfd < 0) {
    len = t_raw_recv (fd, buf, sizeof (buf), got, 16, &n_got);
    if (len <= 0)
      return 4;
    for (i = 0; i < n_got && n_fds < 64; i++)
      fds[n_fds++] = got[i];
    if (t_get32 (buf, 0) == PF_MSG_FRAME_RING && n_got == 3) {
      memfd = got[0];
      bell = got[1];
      relbell = got[2];
      n_entries = t_get32 (buf, 16);
    }
  }
  ring = mmap (NULL, PF_FRAME_RING_SIZE (n_entries), PROT_READ | PROT_WRITE,
      MAP_SHARED, memfd, 0);
  if (ring == MAP_FAILED)
    return 5;
  entries = (const struct pf_msg_frame *) (ring + 1);
  rel = (struct pf_release_ring *) ((uint8_t *) ring +
      PF_FRAME_RING_RELEASE_OFFSET (n_entries));
  rel_seqs = (uint64_t *) (rel + 1);

  if (a->mode == ATTACK_FILL)
    fill_doorbell (bell);
  /* every fd it shares, made blocking: the socket, the ring, both
   * doorbells */
  make_blocking (fd);
  for (i = 0; i < n_fds; i++)
    make_blocking (fds[i]);
  if (a->mode == ATTACK_RACE) {
    pthread_t th;

    if (pthread_create (&th, NULL, steal_thread, &relbell) != 0)
      return 7;
  }
  if (write (a->ready_fd, "r", 1) != 1)
    return 6;

  /* Releases every frame it sees, so that the producer keeps sending it
   * frames (and ringing); with RACE, its thread takes each ring back. */
  for (;;) {
    uint64_t w = __atomic_load_n (&ring->write_seq, __ATOMIC_ACQUIRE);
    int any = 0;

    if (w - r > n_entries)
      r = w - n_entries;
    for (; r != w; r++) {
      rel_seqs[rel_w % n_entries] = entries[r % n_entries].seq;
      __atomic_store_n (&rel->write_seq, ++rel_w, __ATOMIC_RELEASE);
      ring_bell (relbell);
      any = 1;
    }
    if (!any)
      usleep (200);
  }
  return 0;
}

/* ---- the case ---- */

/* Receives for @ms, releasing every frame: how many came. */
static int
count_frames (pf_consumer * c, int ms)
{
  uint64_t end = now_ms () + (uint64_t) ms;
  pf_event ev;
  int n = 0, res;

  while (now_ms () < end) {
    memset (&ev, 0, sizeof (ev));
    res = pf_consumer_receive (c, 50, &ev);
    if (res < 0)
      break;
    if (res == 1 && ev.type == PF_EVENT_FRAME) {
      n++;
      pf_consumer_release (c, ev.frame.seq);
    }
    pf_consumer_event_clear (&ev);
  }
  return n;
}

/* Sends SIGINT to @pid: its exit status if it exits within @ms, else -1
 * (then killed). */
static int
interrupt_within (pid_t pid, int ms, uint64_t * took_ms)
{
  uint64_t start = now_ms ();
  int status;

  kill (pid, SIGINT);
  while (now_ms () - start < (uint64_t) ms) {
    pid_t r = waitpid (pid, &status, WNOHANG);

    if (r == pid) {
      *took_ms = now_ms () - start;
      return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG
          (status);
    }
    t_sleep_ms (5);
  }
  *took_ms = now_ms () - start;
  kill (pid, SIGKILL);
  waitpid (pid, &status, 0);
  return -1;
}

/* A producer process, an honest consumer, and an attacker doing @mode:
 * the honest consumer keeps getting frames, a new consumer gets its
 * HELLO, and SIGINT stops the producer within a second. */
static void
run_attack (enum attack mode, int attack_ms)
{
  pf_consumer_options opts = {.delivery = PF_DELIVERY_NEWEST_FRAME };
  struct producer_args pa = {.path = t_path ("sock") };
  struct attacker_args aa = {.path = t_path ("sock"),.mode = mode };
  struct pollfd pfd;
  pf_consumer *honest, *late = NULL;
  pid_t producer, attacker[4];
  /* RACE: several attackers at once, each a chance per release */
  int n_att = mode == ATTACK_RACE ? 4 : 1, k;
  int ready[2], before, during, after, hello, status, slow = t_slow_factor ();
  uint64_t took = 0;
  char b;

  producer = t_spawn (producer_main, &pa);
  honest = t_connect (&opts);
  before = count_frames (honest, 500 * slow);
  printf ("# frames before the attack (0.5 s): %d\n", before);
  CHECK (before > 0);

  CHECK_INT (pipe (ready), ==, 0);
  aa.ready_fd = ready[1];
  for (k = 0; k < n_att; k++) {
    attacker[k] = t_spawn (attacker_main, &aa);
    pfd.fd = ready[0];
    pfd.events = POLLIN;
    CHECK_MSG (poll (&pfd, 1, 5000 * slow) == 1, "attacker %d never got a "
        "ring", k);
    CHECK_INT (read (ready[0], &b, 1), ==, 1);
  }

  /* the attack, then what the honest consumer gets while it goes on */
  count_frames (honest, attack_ms);
  during = count_frames (honest, 1000 * slow);
  printf ("# frames to the honest consumer in %d ms under attack: %d\n",
      1000 * slow, during);
  /* a new consumer gets its HELLO (and frames) */
  hello = pf_consumer_connect_with (t_path ("sock"), 2000 * slow, -1, &opts,
      &late);
  printf ("# a new consumer's connect: %d\n", hello);
  if (late != NULL)
    pf_consumer_unref (late);
  /* the attackers gone, the producer serves on */
  for (k = 0; k < n_att; k++) {
    kill (attacker[k], SIGKILL);
    waitpid (attacker[k], &status, 0);
  }
  after = count_frames (honest, 500 * slow);
  printf ("# frames after the attacker died (0.5 s): %d\n", after);
  pf_consumer_unref (honest);

  status = interrupt_within (producer, 1000 * slow, &took);
  printf ("# SIGINT: exit %d after %" PRIu64 " ms\n", status, took);
  close (ready[0]);
  close (ready[1]);
  CHECK (during > 0);
  CHECK_INT (hello, ==, 0);
  CHECK (after > 0);
  CHECK_INT (status, ==, 0);
}

/* Defect 1 of issue 26: a consumer clears O_NONBLOCK on its frame
 * doorbell and fills it; the producer's next ring must not block. */
static void
test_consumer_fills_doorbell (void)
{
  run_attack (ATTACK_FILL, 300);
}

/* Defect 2: consumers ring their release doorbells and take the rings
 * back before the producer reads them, again and again (four at once, each
 * release a chance: on b0e183f won within 0.2-3 s in most runs): the
 * producer's read must not block. */
static void
test_consumer_races_release_doorbell (void)
{
  run_attack (ATTACK_RACE, 3000);
}

/* ---- a hostile producer against the consumer (defect 3) ---- */

struct victim_job
{
  pf_consumer *c;
  atomic_int step;              /* 1: frame received, 2: released, 3: done */
  int res_frame, res_release, res_after;
};

static void *
victim_thread (void *data)
{
  struct victim_job *j = data;
  pf_event ev;

  memset (&ev, 0, sizeof (ev));
  j->res_frame = pf_consumer_receive (j->c, 5000, &ev);
  atomic_store (&j->step, 1);
  if (j->res_frame == 1 && ev.type == PF_EVENT_FRAME) {
    j->res_release = pf_consumer_release (j->c, ev.frame.seq);
    pf_consumer_event_clear (&ev);
  }
  atomic_store (&j->step, 2);
  /* reads the ring of the entry taken (stolen): must not wait */
  memset (&ev, 0, sizeof (ev));
  j->res_after = pf_consumer_receive (j->c, 200, &ev);
  pf_consumer_event_clear (&ev);
  atomic_store (&j->step, 3);
  return NULL;
}

/* The doorbells as the protocol in force says: socketpairs (issue 26), or
 * eventfds on b0e183f. @ours gets what we keep and use, @theirs what we
 * send; for eventfds they are the same fd. */
static void
make_bell (int *ours, int *theirs, int semaphore)
{
#ifdef PF_HELLO_FRAME_RING_EVENTFD
  int sp[2];

  (void) semaphore;
  CHECK_INT (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
          0, sp), ==, 0);
  *ours = sp[0];
  *theirs = sp[1];
#else
  *ours = *theirs = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK |
      (semaphore ? EFD_SEMAPHORE : 0));
  CHECK_INT (*ours, >=, 0);
#endif
}

/* A producer that shares the consumer's doorbell ends (it made them),
 * clears O_NONBLOCK on them, fills the release doorbell and takes the
 * frame doorbell's ring back before the consumer reads it: the consumer
 * gets its frame, releases it and waits again, none of it blocking. */
static void
test_producer_steals_doorbells (void)
{
  struct victim_job j = {.step = 0 };
  uint8_t buf[PF_MAX_MSG_SIZE];
  struct pf_msg_frame f;
  struct pf_frame_ring *ring;
  struct pf_release_ring *rel;
  int sv[2], fds[3], bell, bell_c, relbell, relbell_c, memfd, segfd, i;
  uint32_t sent = 0, n = 4;
  uint64_t start, one = 1;
  pthread_t th;
  void *seg;

  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_hello (buf,
              PF_ROLE_PRODUCER, n, 42), NULL, 0), ==, 0);
  sent++;
  unsetenv ("PINNEDFLOW_FRAME_RING");
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 5000, &j.c), ==, 0);
  CHECK_INT (recv (sv[1], buf, sizeof (buf), 0), ==, 40);
  CHECK (t_get32 (buf, 28) & PF_HELLO_FRAME_RING);

  /* the ring, its doorbells, a segment and caps (sections 3.2-3.4, 3.10) */
  memfd = pf_test_memfd (PF_FRAME_RING_SIZE (n), 1);
  CHECK_INT (memfd, >=, 0);
  ring = mmap (NULL, PF_FRAME_RING_SIZE (n), PROT_READ | PROT_WRITE,
      MAP_SHARED, memfd, 0);
  CHECK (ring != MAP_FAILED);
  ring->magic = PF_FRAME_RING_MAGIC;
  ring->n_entries = n;
  rel = (struct pf_release_ring *) ((uint8_t *) ring +
      PF_FRAME_RING_RELEASE_OFFSET (n));
  make_bell (&bell, &bell_c, 1);
  make_bell (&relbell, &relbell_c, 0);
  fds[0] = memfd;
  fds[1] = bell_c;
  fds[2] = relbell_c;
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_frame_ring (buf, n),
          fds, 3), ==, 0);
  sent++;
  segfd = pf_test_memfd (SEG_SIZE, 1);
  CHECK_INT (segfd, >=, 0);
  seg = mmap (NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, segfd, 0);
  CHECK (seg != MAP_FAILED);
  t_fill (seg, SEG_SIZE, 7);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_segment_add (buf, 1,
              SEG_SIZE), &segfd, 1), ==, 0);
  sent++;
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_caps (buf, 1,
              "video/x-raw"), NULL, 0), ==, 0);
  sent++;
  {
    pf_event ev;

    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (j.c, 5000, &ev), ==, 1);
    CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  }

  /* the attack: the consumer's ends made blocking (we share them), its
   * release doorbell full, one entry published and its ring taken back */
  fill_doorbell (relbell_c);
  make_blocking (bell_c);
  make_blocking (relbell_c);
  memset (&f, 0, sizeof (f));
  f.seq = 1;
  f.caps_seq = 1;
  f.n_chunks = 1;
  f.chunks[0].segment_id = 1;
  f.chunks[0].size = SEG_SIZE;
  pf_msg_write_frame ((uint8_t *) (ring + 1), &f);
  t_put32 ((uint8_t *) (ring + 1), offsetof (struct pf_msg_header, reserved),
      sent);
  __atomic_store_n (&ring->write_seq, 1, __ATOMIC_RELEASE);
  if (bell == bell_c) {
    CHECK_INT (write (bell, &one, sizeof (one)), ==, sizeof (one));
    CHECK_INT (read (bell_c, &one, sizeof (one)), ==, sizeof (one));
  } else {
    CHECK_INT (send (bell, &one, 1, MSG_DONTWAIT), ==, 1);
    /* our copy of the consumer's end: a producer can read it too */
    CHECK_INT (recv (bell_c, &one, 1, MSG_DONTWAIT), ==, 1);
  }

  CHECK_INT (pthread_create (&th, NULL, victim_thread, &j), ==, 0);
  start = now_ms ();
  while (atomic_load (&j.step) < 3 && now_ms () - start < 5000)
    t_sleep_ms (5);
  printf ("# consumer: step %d after %" PRIu64 " ms (3: done)\n",
      atomic_load (&j.step), now_ms () - start);
  CHECK_MSG (atomic_load (&j.step) == 3, "the consumer blocked at step %d "
      "(0: receive, 1: release, 2: the next receive)", atomic_load (&j.step));
  CHECK_INT (pthread_join (th, NULL), ==, 0);
  CHECK_INT (j.res_frame, ==, 1);
  CHECK_INT (j.res_release, ==, 0);
  CHECK_INT (j.res_after, ==, 0);
  /* the release is in the ring all the same */
  CHECK_INT (__atomic_load_n (&rel->write_seq, __ATOMIC_ACQUIRE), ==, 1);
  CHECK_INT (((uint64_t *) (rel + 1))[0], ==, 1);

  pf_consumer_unref (j.c);
  close (sv[1]);
  i = 0;
  if (bell != bell_c)
    i = close (bell) | close (relbell);
  CHECK_INT (i | close (bell_c) | close (relbell_c) | close (memfd), ==, 0);
  munmap (ring, PF_FRAME_RING_SIZE (n));
  munmap (seg, SEG_SIZE);
}

static const t_case cases[] = {
  {"consumer-fills-doorbell", test_consumer_fills_doorbell},
  {"consumer-races-release-doorbell", test_consumer_races_release_doorbell},
  {"producer-steals-doorbells", test_producer_steals_doorbells},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
