/* pinnedflow: the two PyCapsule functions the capsule destructors need
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-pycapsule-private.h. The lookup runs once (pthread_once); the
 * functions are then called with the GIL held, as a capsule destructor is.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-pycapsule-private.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*capsule_is_valid_func) (void *capsule, const char *name);
typedef void *(*capsule_get_pointer_func) (void *capsule, const char *name);

static pthread_once_t lookup_once = PTHREAD_ONCE_INIT;
static capsule_is_valid_func capsule_is_valid;
static capsule_get_pointer_func capsule_get_pointer;

static void
lookup (void)
{
  void *is_valid = dlsym (RTLD_DEFAULT, "PyCapsule_IsValid");
  void *get_pointer = dlsym (RTLD_DEFAULT, "PyCapsule_GetPointer");

  /* both or neither: a half-found API is not one to call */
  if (is_valid && get_pointer) {
    *(void **) (&capsule_is_valid) = is_valid;
    *(void **) (&capsule_get_pointer) = get_pointer;
  }
}

int
pf_pycapsule_is (void *capsule, const char *name)
{
  pthread_once (&lookup_once, lookup);
  if (capsule == NULL || capsule_is_valid == NULL)
    return 0;
  return capsule_is_valid (capsule, name) != 0;
}

void *
pf_pycapsule_pointer (void *capsule, const char *name)
{
  pthread_once (&lookup_once, lookup);
  if (capsule == NULL || capsule_get_pointer == NULL)
    return NULL;
  return capsule_get_pointer (capsule, name);
}
