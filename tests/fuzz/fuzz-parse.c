/* pinnedflow: libFuzzer target for pf_msg_parse()
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Input: one packet as it would arrive on the socket. It is parsed as if it
 * came with 0 fds and with 1 fd. Oracle: the parser never reads past the
 * input (ASan), and whatever it accepts re-encodes to exactly the same bytes
 * (nothing is accepted that the encoders could not have produced).
 */
#include <pinnedflow/pf-protocol-private.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static void
check_roundtrip (const uint8_t * data, size_t size, const struct pf_msg *m)
{
  static uint8_t out[PF_MAX_MSG_SIZE];
  size_t n = 0;

  switch (m->type) {
    case PF_MSG_HELLO:
      n = pf_msg_write_hello_full (out, m->u.hello.version, m->u.hello.role,
          m->u.hello.max_held, m->u.hello.flags, m->u.hello.session_id);
      break;
    case PF_MSG_STREAM:{
      pf_stream_info info;

      pf_msg_stream_to_info (&m->u.stream, &info);
      n = pf_msg_write_stream (out, &info);
      break;
    }
    case PF_MSG_REFUSE:
      n = pf_msg_write_refuse (out, m->u.refuse.reason, m->u.refuse.limit);
      break;
    case PF_MSG_SEGMENT_ADD:
      n = pf_msg_write_segment_add (out, m->u.segment_add.segment_id,
          m->u.segment_add.size);
      break;
    case PF_MSG_DEVICE_SEGMENT_ADD:
      /* the checked encoder: it must accept what the parser accepted */
      n = pf_msg_write_device_segment_add (out, &m->u.device_segment_add);
      break;
    case PF_MSG_SEGMENT_REMOVE:
      n = pf_msg_write_segment_remove (out, m->u.segment_remove.segment_id);
      break;
    case PF_MSG_CAPS:
      if (strlen (m->u.caps.text) != m->u.caps.length)
        abort ();
      n = pf_msg_write_caps (out, m->u.caps.caps_seq, m->u.caps.text);
      break;
    case PF_MSG_FRAME:
      n = pf_msg_write_frame (out, &m->u.frame);
      break;
    case PF_MSG_EOS:
      n = pf_msg_write_eos (out);
      break;
    case PF_MSG_RELEASE:
      n = pf_msg_write_release (out, m->u.release.seq);
      break;
    case PF_MSG_DOMAIN:
      n = pf_msg_write_domain (out, m->u.domain.device_uuid);
      break;
    default:
      abort ();                 /* accepted an unknown type */
  }
  if (n != size || memcmp (out, data, size) != 0) {
    fprintf (stderr, "type %u accepted but re-encodes differently\n", m->type);
    abort ();
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static struct pf_msg m;
  unsigned int n_fds;
  uint8_t *copy;

  /* An exact-size heap copy, so that ASan sees any read past the end. */
  copy = malloc (size ? size : 1);
  if (copy == NULL)
    return 0;
  memcpy (copy, data, size);
  for (n_fds = 0; n_fds <= 1; n_fds++) {
    int res = pf_msg_parse (copy, size, n_fds, &m);

    if (res == 0)
      check_roundtrip (copy, size, &m);
    else if (pf_msg_error ()[0] == '\0')
      abort ();                 /* every rejection says why */
  }
  free (copy);
  return 0;
}
