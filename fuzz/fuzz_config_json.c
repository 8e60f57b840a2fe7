/* Fuzz target: the input bytes are a compression config in JSON
 * (OptimizationConfig.from_dict's dictionary, `mil compress --config
 * x.json`, the passes' `config` option). An accepted config is printed back
 * to its dictionary form, which must read back to an equal config. Any
 * crash, sanitizer report, time-out (deep nesting) or mismatch is a bug. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_config_one(data, size, false);
  return 0;
}
