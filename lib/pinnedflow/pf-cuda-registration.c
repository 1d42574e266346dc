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
  int created;
} create_args;

static void *
registration_create (pf_segment * seg, void *user_data, int *err_out)
{
  create_args *args = user_data;
  const pf_cuda_runtime *rt = args->rt;
  pf_cuda_registration *reg = calloc (1, sizeof (*reg));
  unsigned int flags = PF_CUDA_HOST_REGISTER_PORTABLE;
  pf_cuda_error err;
  int supported = 0, prev;

  if (reg == NULL) {
    *err_out = -ENOMEM;
    return NULL;
  }
  args->created = 1;
  reg->rt = rt;
  reg->device_id = args->device_id;
  reg->base = pf_segment_get_base (seg);
  reg->size = (size_t) pf_segment_get_size (seg);

  if (pf_segment_get_state (seg) & PF_SEGMENT_STATE_READONLY) {
    err = rt->DeviceGetAttribute (&supported,
        PF_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED, args->device_id);
    if (err != PF_CUDA_SUCCESS || !supported) {
      reg->error = err;
      reg->reason = "read-only mapping and the device does not support "
          "cudaHostRegisterReadOnly (cudaDevAttrHostRegisterReadOnlySupported"
          " is 0): copies from it are staged";
      return reg;
    }
    flags |= PF_CUDA_HOST_REGISTER_READ_ONLY;
    reg->readonly = 1;
  }

  prev = pf_cuda_device_enter (rt, args->device_id);
  err = rt->HostRegister (reg->base, reg->size, flags);
  /* Handled (copies are staged): leave nothing in this thread's last-error
   * slot for CUDA code that runs on it after us. */
  if (err != PF_CUDA_SUCCESS)
    pf_cuda_take_last_error (rt);
  pf_cuda_device_leave (rt, args->device_id, prev);
  if (err != PF_CUDA_SUCCESS) {
    reg->error = err;
    reg->readonly = 0;
    reg->reason = "cudaHostRegister failed: copies from it are staged";
    return reg;
  }
  reg->registered = 1;
  return reg;
}

/* Runs when the segment dies, before munmap. Copies from it were waited
 * for by their users before they released the segment's memory. */
static void
registration_destroy (void *data)
{
  pf_cuda_registration *reg = data;
  const pf_cuda_runtime *rt = reg->rt;
  int prev;

  if (reg->registered) {
    /* The last unref of a segment can come from any thread. */
    prev = pf_cuda_device_enter (rt, reg->device_id);
    if (rt->HostUnregister (reg->base) != PF_CUDA_SUCCESS)
      pf_cuda_take_last_error (rt);     /* nothing else to do: the pin is
                                         * the driver's to drop at exit */
    pf_cuda_device_leave (rt, reg->device_id, prev);
  }
  free (reg);
}

const pf_cuda_registration *
pf_cuda_segment_register (const pf_cuda_runtime * rt, int device_id,
    pf_segment * seg, int *created)
{
  create_args args = { rt, device_id, 0 };
  pf_cuda_registration *reg;
  int err = 0;

  reg = pf_segment_attach_once (seg, &registration_key, registration_create,
      &args, registration_destroy, &err);
  if (created)
    *created = args.created;
  return reg;
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
