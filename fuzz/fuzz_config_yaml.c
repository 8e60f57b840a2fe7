/* Fuzz target: the input bytes are a compression config in YAML
 * (OptimizationConfig.from_yaml, `mil compress --config x.yaml`). An
 * accepted config is printed back to its dictionary form, which must read
 * back (as JSON) to an equal config. Any crash, sanitizer report, time-out
 * (alias bombs, deep nesting) or mismatch is a bug. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_config_one(data, size, true);
  return 0;
}
