/* pinnedflow: runs a fuzz target over corpus files (no libFuzzer needed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Arguments: files or directories. Exits non-zero if any input crashed the
 * target (it aborts) or if no input was found at all.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static int n_run;

static int
run_file (const char *path)
{
  FILE *f = fopen (path, "rb");
  uint8_t *buf;
  long len;

  if (f == NULL) {
    perror (path);
    return -1;
  }
  fseek (f, 0, SEEK_END);
  len = ftell (f);
  fseek (f, 0, SEEK_SET);
  buf = malloc (len > 0 ? (size_t) len : 1);
  if (buf == NULL || (len > 0 && fread (buf, 1, (size_t) len, f) !=
          (size_t) len)) {
    fclose (f);
    free (buf);
    return -1;
  }
  fclose (f);
  LLVMFuzzerTestOneInput (buf, (size_t) len);
  free (buf);
  n_run++;
  return 0;
}

static int
run_path (const char *path)
{
  struct stat st;
  struct dirent **names;
  int n, i, res = 0;

  if (stat (path, &st) < 0) {
    perror (path);
    return -1;
  }
  if (!S_ISDIR (st.st_mode))
    return run_file (path);
  n = scandir (path, &names, NULL, alphasort);
  if (n < 0)
    return -1;
  for (i = 0; i < n; i++) {
    char sub[4096];

    if (names[i]->d_name[0] != '.') {
      snprintf (sub, sizeof (sub), "%s/%s", path, names[i]->d_name);
      if (run_path (sub) < 0)
        res = -1;
    }
    free (names[i]);
  }
  free (names);
  return res;
}

int
main (int argc, char **argv)
{
  int i, res = 0;

  for (i = 1; i < argc; i++)
    if (run_path (argv[i]) < 0)
      res = 1;
  printf ("%d inputs replayed\n", n_run);
  return res || n_run == 0;
}
