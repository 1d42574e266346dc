/* pinnedflow: live pacing, the producer's lag budget (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A live source cannot wait: every millisecond a publisher spends in
 * pf_producer_wait_ready() for an every-frame consumer is a millisecond of
 * frames every other consumer loses (issue 26). So a live stream is paced
 * by itself, not by its slowest consumer:
 *
 *  - the lag budget: in a live stream, the waits for every-frame consumers
 *    (whoever they are) are spent from one budget of live_max_lag_ms
 *    (pf_producer_set_live_max_lag(), 100 ms by default), which refills at
 *    1/32 of real time (LAG_REFILL_SHIFT). A wait that would overspend it
 *    ends with the consumers it waits for demoted (or disconnected,
 *    p->reliable_action), as the reliable timeout does. So a consumer that
 *    releases a frame now and then, just under the reliable timeout, is
 *    demoted as soon as its waits add up to the budget; and however many
 *    consumers (processes) take turns, the stream loses at most the budget
 *    at once and about 3 % of its time in the long run;
 *  - the penalty: a process (SO_PEERCRED uid and pid, what a reconnecting
 *    peer cannot change without a new process) demoted or disconnected in a
 *    live stream gets newest-frame delivery on every connection it makes in
 *    the next LIVE_PENALTY_NS (60 s): a consumer that reconnects after each
 *    demotion cannot make the camera wait again. A new process is a new
 *    key, but spends from the same budget.
 *
 * live_max_lag_ms -1 is strict lossless delivery from a live source: no
 * budget, no penalty; every-frame consumers pace the stream, each wait
 * bounded only by the reliable timeout. A non-live stream is never paced
 * here (its every-frame consumers pace it, by design).
 *
 * Threads and locks: every function here runs with p->lock held; none
 * blocks, none reads the clock (the caller passes the time).
 */
#include "pf-producer-private.h"

#include <errno.h>
#include <string.h>

/* What is spent of the budget at @now, the refill since lag_at taken off. */
static uint64_t
lag_at (pf_producer * p, uint64_t now)
{
  uint64_t refill;

  if (now <= p->lag_at)
    return p->lag_ns;
  refill = (now - p->lag_at) >> LAG_REFILL_SHIFT;
  return refill >= p->lag_ns ? 0 : p->lag_ns - refill;
}

uint64_t
pacing_budget_left (pf_producer * p, uint64_t now)
{
  uint64_t budget, spent;

  if (!p->live || p->live_max_lag_ms < 0)
    return UINT64_MAX;
  budget = (uint64_t) p->live_max_lag_ms * UINT64_C (1000000);
  spent = lag_at (p, now);
  return spent >= budget ? 0 : budget - spent;
}

void
pacing_spend (pf_producer * p, uint64_t start, uint64_t end)
{
  uint64_t budget, spent;

  if (p->live_max_lag_ms < 0 || end <= start)
    return;
  budget = (uint64_t) p->live_max_lag_ms * UINT64_C (1000000);
  spent = lag_at (p, start) + (end - start);
  p->lag_ns = spent > budget ? budget : spent;
  p->lag_at = end;
}

void
pacing_penalize (pf_producer * p, const struct client *c, uint64_t now)
{
  struct penalty *slot = NULL;
  unsigned int i;

  if (!p->live || p->live_max_lag_ms < 0 || c->info.pid <= 0)
    return;
  for (i = 0; i < MAX_PENALTIES; i++) {
    struct penalty *e = &p->penalties[i];

    if (e->until != 0 && e->uid == c->info.uid && e->pid == c->info.pid) {
      slot = e;                 /* the same process again */
      break;
    }
    /* else a free or expired entry, else the one that ends first */
    if (slot == NULL || (slot->until > now && e->until < slot->until))
      slot = e;
  }
  slot->uid = c->info.uid;
  slot->pid = c->info.pid;
  slot->until = now + LIVE_PENALTY_NS;
}

int
pacing_penalized (pf_producer * p, const struct client *c, uint64_t now)
{
  unsigned int i;

  if (p->live_max_lag_ms < 0 || c->info.pid <= 0)
    return 0;
  for (i = 0; i < MAX_PENALTIES; i++) {
    const struct penalty *e = &p->penalties[i];

    if (e->until > now && e->uid == c->info.uid && e->pid == c->info.pid)
      return 1;
  }
  return 0;
}

int
pf_producer_set_live_max_lag (pf_producer * p, int max_lag_ms)
{
  if (p == NULL || max_lag_ms < -1)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  p->live_max_lag_ms = max_lag_ms;
  /* a wait in progress re-reads its deadline */
  atomic_store (&p->ready_fast, 0);
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
  return 0;
}
