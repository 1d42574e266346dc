/* pinnedflow: the smallest libFuzzer target, linked at configure time to
 * see whether clang can build the real ones here (tests/fuzz/meson.build).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  return 0;
}
