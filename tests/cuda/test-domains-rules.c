/* pinnedflow CUDA suite: one copy per memory domain, the rules (issue 32,
 * item 3; docs/cuda.md "One copy per domain")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-domains-rules rules|doorbell
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson:
 * emu_vmm_env). The consumer processes' cases are test-domains.c's.
 *
 * The transport's side, in one process: pf_consumer_set_domain()'s
 *   refusals, pf_producer_get_device_domains(), a DOMAIN from a consumer
 *   that did not ask for device segments or with flags set ends that
 *   connection (-EPROTO) and nobody else's, pf_producer_publish_domains()'s
 *   refusals (a device variant in host memory, two variants on one device,
 *   no variant, too many) with the reason, and a frame in two domains: the
 *   consumer of device 0 gets the device variant, the other the host one,
 *   each variant's token back once its consumer let go of it;
 *   pf_producer_get_host_domain_clients(); the copier's (pf-domains.h)
 *   refusals, and one download in process, its slot back on release.
 * doorbell: a copy that finds every slot of its domain held asks for the
 *   release doorbell while it waits (pf_producer_want_releases()). The
 *   producer runs without the idle rescan (PINNEDFLOW_RELEASE_IDLE_MS=0,
 *   as tests/transport/test-wake.c: an unrung release is then taken by
 *   nobody until the next publish) and the copier waits up to 10 s for a
 *   slot (PINNEDFLOW_DOMAIN_WAIT_MS, 20 ms by default: too short to
 *   release during it deterministically). A device consumer holds both
 *   device slots (two frames; its limit is 16, so the held rule does not
 *   ask it to ring); the third upload, on a thread, waits (the domain's
 *   waits counter says so: the wait has begun, and the want with it); the
 *   consumer then releases its first frame: the upload ends within 5 s
 *   with its copy (no no_slot), the release came by the doorbell
 *   (release_rings >= 1) and frame_released gave the slot back. Without
 *   the want, the release is never taken and the upload gives up after
 *   the 10 s with no copy: the case fails.
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-domains.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-protocol-private.h>

#include "pf-test-util.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long (*emu_query) (const char *);

/* The driver stand-in, a context on device 0 made current. */
static void
cuda_up (void)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  int (*cu_init) (unsigned int);
  int (*cu_ctx_create) (void **, unsigned int, int);
  void *ctx = NULL;

  CHECK_MSG (drv && rt, "cannot load the emulators: %s", dlerror ());
  *(void **) &cu_init = dlsym (drv, "cuInit");
  *(void **) &cu_ctx_create = dlsym (drv, "cuCtxCreate_v2");
  *(void **) &emu_query = dlsym (rt, "pfemu_query");
  CHECK (cu_init && cu_ctx_create && emu_query);
  CHECK_INT (cu_init (0), ==, 0);
  CHECK_INT (cu_ctx_create (&ctx, 0, 0), ==, 0);
}

static void
check_vmm_empty (void)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, 0);
}

static int rules_released[3];
static int rules_failed;

static void
on_rules_released (void *user_data, void *token)
{
  uintptr_t t = (uintptr_t) token;

  if (t >= 1 && t <= 2)
    __atomic_fetch_add (&rules_released[t], 1, __ATOMIC_SEQ_CST);
}

static void
on_rules_disconnected (void *user_data, const pf_client_info * info)
{
  if (info->error == -EPROTO)
    __atomic_fetch_add (&rules_failed, 1, __ATOMIC_SEQ_CST);
}

/* A raw connection: our HELLO with @flags, the producer's read, then
 * @msg; 1 when the producer hung up on it. */
static int
raw_domain (const char *path, uint32_t flags, const void *msg, size_t len)
{
  uint8_t buf[64];
  int fd = pf_test_connect (path), res;
  size_t n;

  CHECK (fd >= 0);
  n = pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION, PF_ROLE_CONSUMER, 0,
      flags, 0);
  CHECK_INT (pf_test_send_fds (fd, buf, n, NULL, 0), ==, 0);
  CHECK_INT (pf_test_send_fds (fd, msg, len, NULL, 0), ==, 0);
  res = pf_test_wait_hangup (fd, 10000);
  close (fd);
  return res == 1 || res == -ECONNRESET;
}

static int
case_rules (const char *dir)
{
  static const uint8_t zero[16];
  char path[300];
  pf_producer_config cfg;
  pf_consumer_options opt = {.flags = PF_CONSUMER_OPTION_DEVICE_SEGMENTS };
  pf_producer_frame fr[2];
  pf_segment *host = NULL, *dev = NULL, *dev2 = NULL;
  pf_segment *hs[1], *ds[1], *ds2[1];
  pf_producer_variant v[PF_PRODUCER_MAX_VARIANTS + 1];
  pf_producer_domain dom[2];
  pf_client_stats cs[2];
  pf_consumer *a = NULL, *b = NULL;
  pf_producer *p = NULL;
  uint8_t msg[64], uuid[16];
  int sent[PF_PRODUCER_MAX_VARIANTS + 1], i, fds0;

  snprintf (path, sizeof (path), "%s/sock", dir);
  cuda_up ();
  fds0 = pf_test_count_fds ();
  memcpy (uuid, "pfemu-device-000", 16);
  CHECK_INT (pf_segment_new ("host", 1 << 20, 0, &host), ==, 0);
  CHECK_MSG (pf_device_segment_new (0, 1 << 20, &dev) == 0, "%s",
      pf_device_segment_error ());
  CHECK_INT (pf_device_segment_new (0, 1 << 20, &dev2), ==, 0);
  hs[0] = host;
  ds[0] = dev;
  ds2[0] = dev2;
  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.perms = 0600;
  cfg.max_client_frames = 4;
  cfg.callbacks.frame_released = on_rules_released;
  cfg.callbacks.client_disconnected = on_rules_disconnected;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);

  /* a device consumer names device 0; a host one cannot name any */
  CHECK_INT (pf_consumer_connect_with (path, 10000, -1, &opt, &a), ==, 0);
  CHECK_INT (pf_consumer_connect (path, 10000, &b), ==, 0);
  CHECK_INT (pf_consumer_set_domain (b, uuid), ==, -EINVAL);
  CHECK_INT (pf_consumer_set_domain (a, zero), ==, -EINVAL);
  CHECK_INT (pf_consumer_set_domain (NULL, uuid), ==, -EINVAL);
  CHECK_INT (pf_producer_get_device_domains (p, dom, 2), ==, 0);
  CHECK_INT (pf_consumer_set_domain (a, uuid), ==, 0);
  WAIT_FOR (pf_producer_get_device_domains (p, dom, 2) == 1);
  CHECK (memcmp (dom[0].uuid, uuid, 16) == 0);
  CHECK_INT (dom[0].n_clients, ==, 1);

  /* hostile DOMAINs end their own connection only */
  CHECK_INT (raw_domain (path, 0, msg, pf_msg_write_domain (msg, uuid)), ==, 1);
  pf_msg_write_domain (msg, uuid);
  msg[16] = 1;                  /* flags */
  CHECK_INT (raw_domain (path, PF_HELLO_DEVICE_SEGMENTS, msg, 40), ==, 1);
  WAIT_FOR (__atomic_load_n (&rules_failed, __ATOMIC_SEQ_CST) == 2);
  CHECK_INT (pf_producer_get_n_clients (p), ==, 2);

  /* publish_domains' refusals */
  for (i = 0; i < 2; i++) {
    memset (&fr[i], 0, sizeof (fr[i]));
    fr[i].n_chunks = 1;
    fr[i].chunks[0].size = 4096;
    fr[i].pts = fr[i].dts = fr[i].duration = fr[i].clock_pts = PF_TIME_NONE;
    fr[i].offset = fr[i].offset_end = UINT64_MAX;
  }
  fr[0].chunks[0].segment_id = pf_segment_get_id (host);
  fr[1].chunks[0].segment_id = pf_segment_get_id (dev);
  v[0] = (pf_producer_variant) {
  &fr[0], hs, (void *) 1};
  v[1] = (pf_producer_variant) {
  &fr[1], ds, (void *) 2};
  CHECK_INT (pf_producer_publish_domains (p, v, 0, sent), ==, -EINVAL);
  for (i = 2; i <= PF_PRODUCER_MAX_VARIANTS; i++)
    v[i] = v[1];
  CHECK_INT (pf_producer_publish_domains (p, v, PF_PRODUCER_MAX_VARIANTS + 1,
          sent), ==, -EINVAL);
  /* the host variant as a device variant */
  v[2] = v[0];
  CHECK_INT (pf_producer_publish_domains (p, v, 3, sent), ==, -EINVAL);
  CHECK_MSG (strstr (pf_producer_get_error (p), "not in a device segment")
      != NULL, "error: %s", pf_producer_get_error (p));
  /* two variants on device 0 */
  v[2] = v[1];
  v[2].segments = ds2;
  {
    pf_producer_frame f2 = fr[1];

    f2.chunks[0].segment_id = pf_segment_get_id (dev2);
    v[2].frame = &f2;
    CHECK_INT (pf_producer_publish_domains (p, v, 3, sent), ==, -EINVAL);
    CHECK_MSG (strstr (pf_producer_get_error (p), "same device") != NULL,
        "error: %s", pf_producer_get_error (p));
  }
  CHECK_INT (pf_producer_publish_domains_full (p, v, 2, 2, sent), ==, -EINVAL);
  CHECK_INT (pf_producer_get_unsent (p), ==, 0);
  /* a device stream on device 0 has one host consumer (b); on another
   * device, two (a named device 0) */
  CHECK_INT (pf_producer_get_host_domain_clients (p, uuid), ==, 1);
  CHECK_INT (pf_producer_get_host_domain_clients (p, (const uint8_t *)
          "pfemu-device-001"), ==, 2);
  {
    pf_domains *dx;
    pf_node_domain_stats st;
    pf_producer_frame hf;
    pf_segment *hseg = NULL;
    void *tok = NULL;

    /* the copier's refusals; tokens not its own are ignored */
    CHECK_INT (pf_domains_new (0, 4, NULL, &dx), ==, -EINVAL);
    CHECK_INT (pf_domains_new (4095, 4, NULL, &dx), ==, -EINVAL);
    CHECK_INT (pf_domains_new (4096, 0, NULL, &dx), ==, -EINVAL);
    CHECK_INT (pf_domains_new (4096, 4, host, &dx), ==, -EINVAL);
    CHECK_INT (pf_domains_new (4096, 4, dev, &dx), ==, 0);
    pf_domains_release (dx, (void *) 1);
    pf_domains_release (dx, (void *) (PF_DOMAINS_TOKEN_MIN + (99 << 16)));
    /* a host copier does not download, a device one does not upload */
    CHECK_INT (pf_domains_upload (dx, p, &fr[0], pf_segment_get_base (host),
            &hf, &hseg, &tok, 1), ==, 0);
    /* b is in the host domain: one download, into the pinned pool */
    CHECK_INT (pf_domains_download (dx, p, &fr[1],
            pf_device_segment_get_ptr (dev), &hf, &hseg, &tok), ==, 1);
    CHECK (hseg != NULL && pf_segment_get_device (hseg) == NULL);
    CHECK_INT (hf.chunks[0].size, ==, 4096);
    pf_domains_get_stats (dx, &st);
    CHECK_INT (st.downloads, ==, 1);
    CHECK_INT (st.host_free_slots, ==, st.host_slots - 1);
    pf_domains_release (dx, tok);
    pf_domains_get_stats (dx, &st);
    CHECK_INT (st.host_free_slots, ==, st.host_slots);
    pf_domains_free (dx);
  }

  /* one frame, two domains: a gets the device variant, b the host one */
  CHECK_INT (pf_producer_publish_domains (p, v, 2, sent), ==, 2);
  CHECK_INT (sent[0], ==, 1);
  CHECK_INT (sent[1], ==, 1);
  CHECK_INT (pf_producer_get_client_stats (p, cs, 2), ==, 2);
  CHECK_INT (cs[0].frames_sent + cs[1].frames_sent, ==, 2);
  CHECK_INT (cs[0].frames_skipped_device + cs[1].frames_skipped_device, ==, 0);
  /* b lets go: the host token comes back, the device one stays with a */
  pf_consumer_unref (b);
  WAIT_FOR (__atomic_load_n (&rules_released[1], __ATOMIC_SEQ_CST) == 1);
  pf_test_sleep_ms (50);
  CHECK_INT (__atomic_load_n (&rules_released[2], __ATOMIC_SEQ_CST), ==, 0);
  pf_consumer_unref (a);
  WAIT_FOR (__atomic_load_n (&rules_released[2], __ATOMIC_SEQ_CST) == 1);
  CHECK_INT (__atomic_load_n (&rules_released[1], __ATOMIC_SEQ_CST), ==, 1);
  CHECK_INT (__atomic_load_n (&rules_failed, __ATOMIC_SEQ_CST), ==, 2);

  pf_producer_close (p);
  pf_producer_unref (p);
  pf_segment_unref (host);
  pf_segment_unref (dev);
  pf_segment_unref (dev2);
  check_vmm_empty ();
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  unlink (path);
  return 0;
}

/* ---- doorbell ---------------------------------------------------------- */

static pf_domains *bell_ds;
static atomic_int bell_back;    /* device tokens back (frame_released) */

static void
on_bell_released (void *user_data, void *token)
{
  if ((uintptr_t) token >= PF_DOMAINS_TOKEN_MIN) {
    pf_domains_release (bell_ds, token);
    atomic_fetch_add (&bell_back, 1);
  }
}

/* One upload of @host (bytes at @bytes): its device variant, the time it
 * took. */
struct bell_upload
{
  pf_producer *p;
  const pf_producer_frame *host;
  const void *bytes;
  pf_producer_frame frame;
  pf_segment *seg;
  void *token;
  unsigned int n;
  uint64_t ms;
  pthread_t th;
};

static void *
bell_upload_run (void *data)
{
  struct bell_upload *u = data;
  uint64_t t0 = pf_monotonic_ns ();

  u->n = pf_domains_upload (bell_ds, u->p, u->host, u->bytes, &u->frame,
      &u->seg, &u->token, 1);
  u->ms = (pf_monotonic_ns () - t0) / 1000000;
  return NULL;
}

/* Publishes @host (token 1: no host consumer here, nobody gets it) with
 * @u's device variant; the consumer gets the device one. */
static void
bell_publish (pf_producer * p, const pf_producer_frame * host,
    pf_segment ** hs, struct bell_upload *u)
{
  pf_producer_variant v[2];
  int sent[2];

  CHECK_INT (u->n, ==, 1);
  v[0] = (pf_producer_variant) {
  host, hs, (void *) 1};
  v[1] = (pf_producer_variant) {
  &u->frame, &u->seg, u->token};
  CHECK_INT (pf_producer_publish_domains (p, v, 2, sent), ==, 1);
  CHECK_INT (sent[0], ==, 0);
  CHECK_INT (sent[1], ==, 1);
}

/* The next frame @c gets: its sequence number (a device frame). */
static uint64_t
bell_receive (pf_consumer * c)
{
  pf_event ev;
  uint64_t seq;

  do {
    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (c, 10000, &ev), ==, 1);
    if (ev.type != PF_EVENT_FRAME)
      pf_consumer_event_clear (&ev);
  } while (ev.type != PF_EVENT_FRAME);
  seq = ev.frame.seq;
  /* the device variant, in the copier's device pool on device 0 */
  CHECK (ev.segments[0] != NULL &&
      pf_device_segment_get_ordinal (ev.segments[0]) == 0);
  pf_consumer_event_clear (&ev);
  return seq;
}

static const pf_node_domain_info *
bell_stats (pf_node_domain_stats * st)
{
  pf_domains_get_stats (bell_ds, st);
  CHECK_INT (st->n_domains, ==, 1);
  return &st->domain[0];
}

static int
case_doorbell (const char *dir)
{
  char path[300];
  pf_producer_config cfg;
  pf_consumer_options opt = {.delivery = PF_DELIVERY_EVERY_FRAME,
    .flags = PF_CONSUMER_OPTION_DEVICE_SEGMENTS
  };
  pf_producer_frame fr;
  pf_segment *host = NULL, *hs[1];
  pf_producer_domain dom[1];
  pf_node_domain_stats st;
  pf_client_stats cs;
  struct bell_upload u;
  pf_consumer *a = NULL;
  pf_producer *p = NULL;
  uint8_t uuid[16];
  uint64_t seqs[3];
  int i, fds0;

  snprintf (path, sizeof (path), "%s/sock", dir);
  cuda_up ();
  fds0 = pf_test_count_fds ();
  memcpy (uuid, "pfemu-device-000", 16);
  CHECK_INT (pf_segment_new ("host", 4096, 0, &host), ==, 0);
  memset (pf_segment_get_base (host), 0x5a, 4096);
  hs[0] = host;
  memset (&fr, 0, sizeof (fr));
  fr.n_chunks = 1;
  fr.chunks[0].size = 4096;
  fr.chunks[0].segment_id = pf_segment_get_id (host);
  fr.pts = fr.dts = fr.duration = fr.clock_pts = PF_TIME_NONE;
  fr.offset = fr.offset_end = UINT64_MAX;

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.perms = 0600;
  cfg.max_client_frames = 16;   /* 2 held: the held rule does not ring */
  cfg.reliable_timeout_ms = 60000;
  cfg.callbacks.frame_released = on_bell_released;
  setenv ("PINNEDFLOW_RELEASE_IDLE_MS", "0", 1);
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  unsetenv ("PINNEDFLOW_RELEASE_IDLE_MS");
  setenv ("PINNEDFLOW_DOMAIN_WAIT_MS", "10000", 1);
  CHECK_INT (pf_domains_new (4096, 1, NULL, &bell_ds), ==, 0);  /* 2 slots */
  unsetenv ("PINNEDFLOW_DOMAIN_WAIT_MS");

  CHECK_INT (pf_consumer_connect_with (path, 10000, -1, &opt, &a), ==, 0);
  CHECK_INT (pf_device_consumer_enable (a), ==, 0);
  CHECK_INT (pf_consumer_set_domain (a, uuid), ==, 0);
  WAIT_FOR (pf_producer_get_device_domains (p, dom, 1) == 1);

  /* two frames: both device slots held by the consumer */
  memset (&u, 0, sizeof (u));
  u.p = p;
  u.host = &fr;
  u.bytes = pf_segment_get_base (host);
  for (i = 0; i < 2; i++) {
    bell_upload_run (&u);
    bell_publish (p, &fr, hs, &u);
    seqs[i] = bell_receive (a);
  }
  CHECK_INT (bell_stats (&st)->free_slots, ==, 0);
  CHECK_INT (st.domain[0].waits, ==, 0);

  /* the third waits for a slot; released once the wait has begun */
  CHECK_INT (pthread_create (&u.th, NULL, bell_upload_run, &u), ==, 0);
  WAIT_FOR (bell_stats (&st)->waits == 1);
  CHECK_INT (pf_consumer_release (a, seqs[0]), ==, 0);
  CHECK_INT (pthread_join (u.th, NULL), ==, 0);
  CHECK_MSG (u.n == 1 && u.ms < 5000, "the wait did not end by the doorbell: "
      "%u variant(s) after %" PRIu64 " ms", u.n, u.ms);
  CHECK_INT (atomic_load (&bell_back), ==, 1);
  CHECK_INT (pf_producer_get_client_stats (p, &cs, 1), ==, 1);
  CHECK_MSG (cs.release_rings >= 1, "no ring for the release");
  bell_stats (&st);
  CHECK_INT (st.domain[0].no_slot, ==, 0);
  CHECK_INT (st.domain[0].uploads, ==, 3);
  CHECK_INT (st.domain[0].waits, ==, 1);
  CHECK_INT (st.uploads, ==, 3);

  /* the third published; everything back */
  bell_publish (p, &fr, hs, &u);
  seqs[2] = bell_receive (a);
  CHECK_INT (pf_consumer_release (a, seqs[1]), ==, 0);
  CHECK_INT (pf_consumer_release (a, seqs[2]), ==, 0);
  CHECK_INT (pf_producer_want_releases (p, 1), ==, 0);
  WAIT_FOR (atomic_load (&bell_back) == 3);
  CHECK_INT (pf_producer_want_releases (p, 0), ==, 0);
  CHECK_INT (bell_stats (&st)->free_slots, ==, st.domain[0].n_slots);

  pf_consumer_unref (a);
  pf_producer_close (p);
  pf_producer_unref (p);
  pf_domains_free (bell_ds);
  bell_ds = NULL;
  pf_segment_unref (host);
  check_vmm_empty ();
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  unlink (path);
  return 0;
}

int
main (int argc, char **argv)
{
  char dir[] = "/tmp/pf-domains-rules-XXXXXX";
  int res;

  if (argc != 2 || (strcmp (argv[1], "rules") != 0 &&
          strcmp (argv[1], "doorbell") != 0)) {
    fprintf (stderr, "usage: %s rules|doorbell\n", argv[0]);
    return 2;
  }
  CHECK (mkdtemp (dir) != NULL);
  if (strcmp (argv[1], "rules") == 0)
    res = case_rules (dir);
  else
    res = case_doorbell (dir);
  rmdir (dir);
  if (res == 0)
    printf ("ok %s\n", argv[1]);
  return res;
}
