/* pinnedflow: CUDA host registration of segments, once each per process
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threading: the registration is created under the segment's lock
 * (pf_segment_attach_once()) by whichever thread asks first; afterwards it
 * is immutable until the segment's last unref, which runs
 * registration_destroy() on the unreffing thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-cuda-registration.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The attachment key: one registration per segment per process, whoever
 * asks (libgstpinnedflowcuda's registration is a façade over this one). */
static const char registration_key = 0;

typedef struct
{
  const pf_cuda_runtime *rt;
  int device_id;
  const pf_cuda_context_hold *hold;
  int created;
} create_args;

/* The registration and the context it lives in (pub first: the attachment
 * hands out &pub). */
typedef struct
{
  pf_cuda_registration pub;
  void *ctx;                    /* pushed for register/unregister, or NULL:
                                 * the thread's current context */
  int primary;                  /* ctx is the primary context, retained */
  void (*unref) (void *data);   /* the caller's hold, to drop */
  void *data;
} registration;

/* Takes the context the registration will live in: the caller's hold (a
 * reference on what keeps it), else the one current on the calling thread
 * (its owner keeps it alive longer than the segment: e.g. pf_uploader's
 * bounce segment, freed with the engine, under its element's context),
 * else the primary context (retained). */
static void
take_context (registration * reg, const create_args * args)
{
  const pf_cuda_runtime *rt = args->rt;
  void *primary = NULL, *current = NULL;

  if (rt->CtxPushCurrent == NULL)
    return;
  if (args->hold != NULL && args->hold->ctx != NULL) {
    reg->ctx = args->hold->ctx;
    if (args->hold->ref)
      args->hold->ref (args->hold->data);
    reg->unref = args->hold->unref;
    reg->data = args->hold->data;
  } else if (rt->CtxGetCurrent (&current) == 0 && current != NULL) {
    reg->ctx = current;
  } else if (rt->DevicePrimaryCtxRetain (&primary, args->device_id) == 0) {
    reg->ctx = primary;
    reg->primary = 1;
  }
  /* else (EXCLUSIVE_PROCESS and another context alive): the current one */
}

static void
drop_context (registration * reg)
{
  if (reg->primary)
    reg->pub.rt->DevicePrimaryCtxRelease (reg->pub.device_id);
  if (reg->unref)
    reg->unref (reg->data);
  reg->ctx = NULL;
  reg->primary = 0;
  reg->unref = NULL;
}

static void *
registration_create (pf_segment * seg, void *user_data, int *err_out)
{
  create_args *args = user_data;
  const pf_cuda_runtime *rt = args->rt;
  registration *reg = calloc (1, sizeof (*reg));
  unsigned int flags = PF_CUDA_HOST_REGISTER_PORTABLE;
  pf_cuda_error err;
  int supported = 0, prev;

  if (reg == NULL) {
    *err_out = -ENOMEM;
    return NULL;
  }
  args->created = 1;
  reg->pub.rt = rt;
  reg->pub.device_id = args->device_id;
  reg->pub.base = pf_segment_get_base (seg);
  reg->pub.size = (size_t) pf_segment_get_size (seg);

  if (pf_segment_get_state (seg) & PF_SEGMENT_STATE_READONLY) {
    err = rt->DeviceGetAttribute (&supported,
        PF_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED, args->device_id);
    if (err != PF_CUDA_SUCCESS || !supported) {
      reg->pub.error = err;
      reg->pub.reason = "read-only mapping and the device does not support "
          "cudaHostRegisterReadOnly (cudaDevAttrHostRegisterReadOnlySupported"
          " is 0): copies from it are staged";
      return reg;
    }
    flags |= PF_CUDA_HOST_REGISTER_READ_ONLY;
    reg->pub.readonly = 1;
  }

  take_context (reg, args);
  prev = pf_cuda_context_enter (rt, args->device_id, reg->ctx);
  err = rt->HostRegister (reg->pub.base, reg->pub.size, flags);
  /* Handled (copies are staged): leave nothing in this thread's last-error
   * slot for CUDA code that runs on it after us. */
  if (err != PF_CUDA_SUCCESS)
    pf_cuda_take_last_error (rt);
  pf_cuda_device_leave (rt, args->device_id, prev);
  if (err != PF_CUDA_SUCCESS) {
    drop_context (reg);
    reg->pub.error = err;
    reg->pub.readonly = 0;
    reg->pub.reason = "cudaHostRegister failed: copies from it are staged";
    return reg;
  }
  reg->pub.registered = 1;
  return reg;
}

/* Runs when the segment dies, before munmap. Copies from it were waited
 * for by their users before they released the segment's memory. */
static void
registration_destroy (void *data)
{
  registration *reg = data;
  const pf_cuda_runtime *rt = reg->pub.rt;
  int prev;

  if (reg->pub.registered) {
    /* The last unref of a segment can come from any thread; the context
     * the pages were registered in is still alive (held). */
    prev = pf_cuda_context_enter (rt, reg->pub.device_id, reg->ctx);
    if (rt->HostUnregister (reg->pub.base) != PF_CUDA_SUCCESS)
      pf_cuda_take_last_error (rt);     /* nothing else to do: the pin is
                                         * the driver's to drop at exit */
    pf_cuda_device_leave (rt, reg->pub.device_id, prev);
  }
  drop_context (reg);
  free (reg);
}

const pf_cuda_registration *
pf_cuda_segment_register_in (const pf_cuda_runtime * rt, int device_id,
    pf_segment * seg, const pf_cuda_context_hold * hold, int *created)
{
  create_args args = { rt, device_id, hold, 0 };
  registration *reg;
  int err = 0;

  reg = pf_segment_attach_once (seg, &registration_key, registration_create,
      &args, registration_destroy, &err);
  if (created)
    *created = args.created;
  return reg ? &reg->pub : NULL;
}

const pf_cuda_registration *
pf_cuda_segment_register (const pf_cuda_runtime * rt, int device_id,
    pf_segment * seg, int *created)
{
  return pf_cuda_segment_register_in (rt, device_id, seg, NULL, created);
}

const pf_cuda_registration *
pf_cuda_segment_get_registration (pf_segment * seg)
{
  return pf_segment_get_attached (seg, &registration_key);
}

int
pf_cuda_registration_covers (const pf_cuda_registration * reg,
    const pf_cuda_runtime * rt, const void *ptr, size_t len)
{
  const uint8_t *p = ptr, *base = reg->base;

  return reg->registered && reg->rt == rt && p >= base &&
      (size_t) (p - base) <= reg->size
      && len <= reg->size - (size_t) (p - base);
}
