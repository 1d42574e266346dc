/* pinnedflow: caps-string text helpers of the node API, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-caps.h. A small tokenizer for the text gst_caps_to_string()
 * writes: fields split at ',' / ';' outside quotes and brackets, an
 * optional "(type)" before each value.
 *
 * No state: every function is reentrant.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-caps.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the trimmed text [s, e) into @dst (at most @len - 1 bytes). */
static void
copy_trimmed (char *dst, size_t len, const char *s, const char *e)
{
  size_t n;

  while (s < e && isspace ((unsigned char) *s))
    s++;
  while (e > s && isspace ((unsigned char) e[-1]))
    e--;
  if (e - s >= 2 && *s == '"' && e[-1] == '"') {
    s++;
    e--;
  }
  n = (size_t) (e - s);
  if (n >= len)
    n = len - 1;
  memcpy (dst, s, n);
  dst[n] = '\0';
}

/* End of the field starting at @s: the next ',' or ';' outside quotes and
 * brackets, or the end of the string. */
static const char *
field_end (const char *s)
{
  int depth = 0, quoted = 0;

  for (; *s; s++) {
    if (quoted) {
      if (*s == '\\' && s[1])
        s++;
      else if (*s == '"')
        quoted = 0;
      continue;
    }
    if (*s == '"')
      quoted = 1;
    else if (*s == '{' || *s == '[' || *s == '<' || *s == '(')
      depth++;
    else if ((*s == '}' || *s == ']' || *s == '>' || *s == ')') && depth > 0)
      depth--;
    else if ((*s == ',' || *s == ';') && depth == 0)
      break;
  }
  return s;
}

static int
parse_u32 (const char *s, uint32_t * out)
{
  char *end;
  unsigned long v;

  errno = 0;
  v = strtoul (s, &end, 10);
  if (end == s || errno != 0 || v > UINT32_MAX || *s == '-')
    return -EINVAL;
  *out = (uint32_t) v;
  return 0;
}

int
pf_node_caps_parse (const char *caps, pf_node_caps_info * info)
{
  const char *s, *e, *eq, *v;
  char name[32], value[64];

  if (caps == NULL || info == NULL)
    return -EINVAL;
  memset (info, 0, sizeof (*info));
  info->fps_d = 1;

  /* Media type, possibly followed by "(memory:...)" features. */
  s = caps;
  e = s;
  while (*e && *e != ',' && *e != ';' && *e != '(')
    e++;
  copy_trimmed (info->media_type, sizeof (info->media_type), s, e);
  if (info->media_type[0] == '\0')
    return -EINVAL;
  if (*e == '(') {
    while (*e && *e != ')')
      e++;
    if (*e == ')')
      e++;
  }

  while (*e == ',') {
    s = e + 1;
    e = field_end (s);
    eq = memchr (s, '=', (size_t) (e - s));
    if (eq == NULL)
      continue;
    copy_trimmed (name, sizeof (name), s, eq);
    v = eq + 1;
    while (v < e && isspace ((unsigned char) *v))
      v++;
    if (v < e && *v == '(') {   /* "(int)", "(string)", ... */
      while (v < e && *v != ')')
        v++;
      if (v < e)
        v++;
    }
    copy_trimmed (value, sizeof (value), v, e);
    if (strcmp (name, "format") == 0) {
      copy_trimmed (info->format, sizeof (info->format), value,
          value + strlen (value));
    } else if (strcmp (name, "width") == 0) {
      if (parse_u32 (value, &info->width) < 0)
        info->width = 0;
    } else if (strcmp (name, "height") == 0) {
      if (parse_u32 (value, &info->height) < 0)
        info->height = 0;
    } else if (strcmp (name, "framerate") == 0) {
      int n, d;
      if (sscanf (value, "%d/%d", &n, &d) == 2 && d > 0 && n >= 0) {
        info->fps_n = n;
        info->fps_d = d;
      }
    }
  }
  return 0;
}

int
pf_node_video_caps (char *buf, size_t len, const char *format,
    uint32_t width, uint32_t height, int32_t fps_n, int32_t fps_d)
{
  int n;

  if (buf == NULL || format == NULL || fps_d <= 0 || fps_n < 0)
    return -EINVAL;
  n = snprintf (buf, len, "video/x-raw, format=(string)%s, width=(int)%u, "
      "height=(int)%u, framerate=(fraction)%d/%d", format, width, height,
      fps_n, fps_d);
  if (n < 0 || (size_t) n >= len)
    return -ENOSPC;
  return n;
}
