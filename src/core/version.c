/* The library version (mil/version.h). */
#include "mil/version.h"

#ifndef MIL_VERSION_STRING
#define MIL_VERSION_STRING "0.0.0"
#endif

const char *mil_version(void) { return MIL_VERSION_STRING; }
