/* pinnedflow: the two PyCapsule functions the capsule destructors need
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Internal (not installed). libpinnedflow links nothing of Python; the
 * capsule destructors of pf-dlpack.c and pf-arrow.c run only inside an
 * interpreter that made the capsule (through ctypes.pythonapi, which finds
 * the interpreter's symbols in the process the same way), so they look the
 * functions up there, once.
 */
#ifndef __PF_PYCAPSULE_PRIVATE_H__
#define __PF_PYCAPSULE_PRIVATE_H__

/* PyCapsule_IsValid (capsule, name) != 0, or 0 when the interpreter's
 * functions cannot be found. Never sets a Python exception. */
int pf_pycapsule_is (void *capsule, const char *name);

/* PyCapsule_GetPointer (capsule, name), once pf_pycapsule_is() said yes. */
void *pf_pycapsule_pointer (void *capsule, const char *name);

#endif /* __PF_PYCAPSULE_PRIVATE_H__ */
