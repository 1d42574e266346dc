/* pinnedflow: one frame in several memory domains (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf_producer_publish_domains(), pf_producer_get_device_domains() and
 * pf_producer_get_host_domain_clients()
 * (issue 32, "one copy per domain"; docs/protocol.md 3.12): a consumer
 * names its device with a DOMAIN (client.domain_uuid,
 * pf-producer-client.c); a frame published in several domains has one
 * frame number and one pframe per variant, so that each variant's token
 * comes back (frame_released) once the consumers that got that variant
 * released it.
 *
 * Threading: as pf-producer.c (p->lock around the clients; callbacks after
 * unlocking). Calls go down only: this file calls pf-producer.c
 * (producer_lookup_psegs(), producer_chunks_check()), pf-producer-io.c and
 * pf-producer-client.c; none of them calls it.
 */
#include "pf-producer-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The device of variant @v (its chunks' segments @ps), or -EINVAL with
 * p->error set: every chunk in a device segment, all on one device. */
static int
variant_device (pf_producer * p, unsigned int v, struct pseg *const *ps,
    unsigned int n, const uint8_t ** uuid)
{
  unsigned int i;

  for (i = 0; i < n; i++) {
    if (!ps[i]->is_device || memcmp (ps[i]->dmsg.device_uuid,
            ps[0]->dmsg.device_uuid, 16) != 0) {
      snprintf (p->error, sizeof (p->error), "variant %u: chunk %u is not "
          "in a device segment of the device of its chunk 0", v, i);
      return -EINVAL;
    }
  }
  *uuid = ps[0]->dmsg.device_uuid;
  return 0;
}

int
pf_producer_publish_domains (pf_producer * p,
    const pf_producer_variant * variants, unsigned int n_variants, int *sent)
{
  return pf_producer_publish_domains_full (p, variants, n_variants, 0, sent);
}

int
pf_producer_publish_domains_full (pf_producer * p,
    const pf_producer_variant * variants, unsigned int n_variants,
    unsigned int device_default, int *sent)
{
  struct event_list ev = { NULL };
  struct pseg *ps[PF_PRODUCER_MAX_VARIANTS][PF_MAX_CHUNKS];
  const uint8_t *uuid[PF_PRODUCER_MAX_VARIANTS] = { NULL };
  struct pf_msg_frame msg[PF_PRODUCER_MAX_VARIANTS];
  struct pframe *pf[PF_PRODUCER_MAX_VARIANTS] = { NULL };
  uint64_t bytes[PF_PRODUCER_MAX_VARIANTS], now;
  int cnt[PF_PRODUCER_MAX_VARIANTS] = { 0 };
  struct client *c;
  unsigned int v, w;
  int res = 0, count = 0;

  if (sent != NULL)
    for (v = 0; v < n_variants && v < PF_PRODUCER_MAX_VARIANTS; v++)
      sent[v] = 0;
  if (p == NULL || variants == NULL || n_variants < 1 ||
      n_variants > PF_PRODUCER_MAX_VARIANTS || device_default >= n_variants)
    return -EINVAL;
  for (v = 0; v < n_variants; v++) {
    const pf_producer_frame *f = variants[v].frame;

    if (f == NULL || variants[v].segments == NULL || f->n_chunks < 1 ||
        f->n_chunks > PF_MAX_CHUNKS)
      return -EINVAL;
  }

  pthread_mutex_lock (&p->lock);
  /* every lookup first: a miss drops the lock */
  for (v = 0; v < n_variants && res == 0; v++)
    res = producer_lookup_psegs (p, variants[v].frame->n_chunks,
        variants[v].segments, ps[v]);
  if (res < 0)
    goto out;
  /* closed meanwhile, or the clock and the releases taken (as
   * pf_producer_publish ()) */
  if ((res = producer_publish_start (p, &now)) < 0)
    goto out;
  for (v = 0; v < n_variants; v++) {
    const pf_producer_frame *f = variants[v].frame;

    if (producer_chunks_check (p, f, ps[v], &bytes[v]) < 0 ||
        (v > 0 && variant_device (p, v, ps[v], f->n_chunks, &uuid[v]) < 0)) {
      res = -EINVAL;
      goto out;
    }
    for (w = 1; w < v; w++) {
      if (memcmp (uuid[w], uuid[v], 16) == 0) {
        snprintf (p->error, sizeof (p->error), "variants %u and %u are on "
            "the same device", w, v);
        res = -EINVAL;
        goto out;
      }
    }
    if (pf_msg_frame_encode (&msg[v], f, p->seq + 1, p->caps_seq, now) < 0) {
      snprintf (p->error, sizeof (p->error), "variant %u: %s", v,
          pf_msg_error ());
      res = -EINVAL;
      goto out;
    }
  }
  /* a pframe per variant (released ones first: no allocation per frame) */
  for (v = 0; v < n_variants; v++) {
    if ((pf[v] = p->spare) != NULL)
      p->spare = pf[v]->next;
    else if ((pf[v] = malloc (sizeof (*pf[v]))) == NULL) {
      res = -ENOMEM;
      goto out;
    }
    pf[v]->seq = p->seq + 1;
    pf[v]->token = variants[v].token;
    pf[v]->holders = 0;
    pf[v]->prev = pf[v]->next = NULL;
  }
  p->seq++;
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_ACTIVE)
      continue;
    client_take_releases (p, c, &ev);
    if (c->state != CLIENT_ACTIVE)
      continue;
    /* its domain's variant, else the host one (a consumer of device
     * segments that named no domain: device_default's) */
    v = 0;
    if (c->wants_device && c->has_domain) {
      for (w = 1; w < n_variants && v == 0; w++)
        if (memcmp (uuid[w], c->domain_uuid, 16) == 0)
          v = w;
    } else if (c->wants_device) {
      v = device_default;
    }
    w = client_offer_frame (p, c, (const uint8_t *) &msg[v], sizeof (msg[v]),
        ps[v], variants[v].frame->n_chunks, pf[v], bytes[v],
        variants[v].frame->buffer_flags, now, &ev);
    cnt[v] += (int) w;
    count += (int) w;
    if (c->state == CLIENT_ACTIVE &&
        c->stats.delivery == PF_DELIVERY_EVERY_FRAME &&
        c->n_held >= p->max_client_frames)
      atomic_store (&p->ready_fast, 0);
  }
  for (v = 0; v < n_variants; v++) {
    if (cnt[v] == 0)
      continue;
    pf[v]->next = p->frames;
    if (p->frames)
      p->frames->prev = pf[v];
    p->frames = pf[v];
    pf[v] = NULL;
    if (sent != NULL)
      sent[v] = cnt[v];
  }
  if (count == 0)
    p->unsent++;
  /* lagging clients: their releases rung from now on (the held rule,
   * after the frames are in p->frames, as pf_producer_publish ()) */
  for (c = p->clients; c != NULL; c = c->next)
    if (c->state == CLIENT_ACTIVE)
      release_held (p, c, &ev);
  res = count;

out:
  for (v = 0; v < n_variants; v++) {
    if (pf[v] != NULL) {
      pf[v]->next = p->spare;
      p->spare = pf[v];
    }
  }
  pthread_mutex_unlock (&p->lock);
  if (ev.head != NULL || ev.released != NULL)
    io_dispatch_events (p, &ev);
  return res;
}

unsigned int
pf_producer_get_host_domain_clients (pf_producer * p,
    const uint8_t device_uuid[16])
{
  if (device_uuid == NULL)
    return 0;
  return pf_producer_get_host_domain_clients_full (p,
      (const uint8_t (*)[16]) device_uuid, 1);
}

unsigned int
pf_producer_get_host_domain_clients_full (pf_producer * p,
    const uint8_t (*device_uuids)[16], unsigned int n_uuids)
{
  unsigned int n = 0, i;
  struct client *c;

  if (p == NULL || device_uuids == NULL || n_uuids == 0)
    return 0;
  pthread_mutex_lock (&p->lock);
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_ACTIVE || (c->wants_device && !c->has_domain))
      continue;
    /* a device consumer whose device is one of the frame's: no host frame */
    for (i = 0; c->wants_device && i < n_uuids; i++)
      if (memcmp (c->domain_uuid, device_uuids[i], 16) == 0)
        break;
    if (!c->wants_device || i == n_uuids)
      n++;
  }
  pthread_mutex_unlock (&p->lock);
  return n;
}

unsigned int
pf_producer_get_device_domains (pf_producer * p, pf_producer_domain * domains,
    unsigned int max)
{
  pf_producer_domain seen[MAX_CLIENTS];
  unsigned int n = 0, i;
  struct client *c;

  if (p == NULL)
    return 0;
  pthread_mutex_lock (&p->lock);
  for (c = p->clients; c != NULL; c = c->next) {
    if (c->state != CLIENT_ACTIVE || !c->wants_device || !c->has_domain)
      continue;
    for (i = 0; i < n; i++)
      if (memcmp (seen[i].uuid, c->domain_uuid, 16) == 0)
        break;
    if (i == n) {
      if (n == MAX_CLIENTS)
        continue;
      memcpy (seen[n].uuid, c->domain_uuid, 16);
      seen[n++].n_clients = 0;
    }
    seen[i].n_clients++;
  }
  pthread_mutex_unlock (&p->lock);
  for (i = 0; i < n && i < max && domains != NULL; i++)
    domains[i] = seen[i];
  return n;
}
