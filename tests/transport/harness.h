/* pinnedflow transport tests: a tiny harness (plain C)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every test case runs in a forked child (so a crash fails that case only)
 * inside its own mkdtemp() directory, removed by the parent afterwards
 * whatever happened. Children a case spawns get PR_SET_PDEATHSIG(SIGKILL) and
 * are killed and reaped at the end of the case.
 */
#ifndef __PF_TEST_HARNESS_H__
#define __PF_TEST_HARNESS_H__

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-protocol-private.h>
#include <pinnedflow/pf-segment.h>

/* CHECK, CHECK_INT, CHECK_MSG, WAIT_FOR: a failed check ends the case. */
#include "pf-test-util.h"

/* WAIT_FOR (@cond) on what frame_released counts, as a producer that
 * sleeps until a release must: with the release doorbells asked for
 * meanwhile (pf_producer_want_releases (); a consumer with a frame ring
 * rings only then, docs/protocol.md 3.10). Without it a release reaches
 * frame_released at the next publish, or, for a consumer that keeps up,
 * after the producer's idle delay (500 ms). */
#define T_WAIT_RELEASED(tp, cond) do { \
    pf_producer_want_releases ((tp)->p, 1); \
    WAIT_FOR (cond); \
    pf_producer_want_releases ((tp)->p, 0); \
  } while (0)

typedef struct
{
  const char *name;
  void (*func) (void);
} t_case;

/* Runs the cases named on the command line (all without arguments). */
int t_main (int argc, char **argv, const t_case * cases);
/* Ends the case as failed (what a failed CHECK runs). */
void t_fail (void) __attribute__((noreturn));
/* Ends the case as skipped (reported as such, never as a pass). */
void t_skip (const char *why) __attribute__((noreturn));

/* This case's temporary directory, and a path inside it. */
const char *t_dir (void);
const char *t_path (const char *name);

int t_count_fds (void);

/* Forks a child running @fn (@arg); it exits with @fn's return value. The
 * child dies with its parent and is killed at the end of the case. */
pid_t t_spawn (int (*fn) (void *arg), void *arg);
/* Waits for @pid; returns its exit status, or 128 + signal. */
int t_wait (pid_t pid);

void t_sleep_ms (int ms);

/* Frame payload pattern: deterministic bytes derived from @seed, and a
 * checksum to verify them on the other side. */
void t_fill (void *data, size_t size, uint64_t seed);
int t_check_fill (const void *data, size_t size, uint64_t seed);

/* A producer with counting callbacks (run on its I/O thread: the counters
 * are atomic; last_* are written before their counter is incremented, so
 * read them after waiting for the counter). */
typedef struct
{
  pf_producer *p;
  _Atomic int released;
  _Atomic int connected;
  _Atomic int disconnected;
  _Atomic int last_error;
  /* the reason of the last disconnection ("" before one): a slot of
   * reasons[], which the next disconnections do not write over until 8
   * more came */
  const char *_Atomic last_reason;
  char reasons[8][128];
  _Atomic int last_pid;
  /* client_event, per type (index = enum pf_client_event_type), and the
   * last one (written before its counter is incremented) */
  _Atomic int events[5];
  _Atomic uint64_t events_dropped;      /* sum of pf_client_event.dropped */
  pf_client_event last_event;
} t_producer;

int t_producer_start (t_producer * tp, const char *path,
    unsigned int max_frames);
/* t_producer_start() with the rest of @cfg (live, reliable timeout,
 * max_clients ...); path, max_client_frames and callbacks are set here. */
int t_producer_start_config (t_producer * tp, const char *path,
    unsigned int max_frames, const pf_producer_config * cfg);
void t_producer_stop (t_producer * tp);

/* The end of a case with a producer: @tp stopped, then @seg (may be NULL)
 * unreffed, and no fd left open beyond the @fds0 counted at its start. */
void t_finish (t_producer * tp, pf_segment * seg, int fds0);

/* A consumer with @opts (NULL: the defaults) connected to t_path ("sock")
 * within 5 s; a failure ends the case. */
pf_consumer *t_connect (const pf_consumer_options * opts);

/* @f as one chunk of @size bytes at @offset of @seg, those bytes filled
 * with the pattern of @seed; no timestamps (PF_TIME_NONE), no offsets
 * (UINT64_MAX), no flags: the caller sets what its case needs. */
void t_frame_init (pf_producer_frame * f, pf_segment * seg, uint64_t offset,
    uint64_t size, uint64_t seed);

/* Publishes one frame of @size bytes at @offset of @seg, filled with the
 * pattern of @seed (= its seq, 1-based, if the caller keeps count); pts is
 * @seed us, offset @seed. */
int t_publish (t_producer * tp, pf_segment * seg, uint64_t offset,
    uint64_t size, uint64_t seed);

/* 10 under valgrind (its preload is in LD_PRELOAD: everything is ~20x
 * slower), else 1: what a case multiplies its pacing or its hang bounds
 * by. */
int t_slow_factor (void);

/* Little-endian (host order) 32-bit fields of a raw protocol message, for
 * the cases that play a peer written from docs/protocol.md. */
void t_put32 (uint8_t * b, size_t off, uint32_t v);
uint32_t t_get32 (const uint8_t * b, size_t off);

/* One packet of @fd into @buf (@cap bytes), its fds (CLOEXEC) into @fds,
 * at most @max_fds (<= 16) kept, the others closed; *@n_fds: how many
 * kept. Returns recvmsg()'s result. */
ssize_t t_raw_recv (int fd, uint8_t * buf, size_t cap, int *fds, int max_fds,
    int *n_fds);

#endif
