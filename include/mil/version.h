/* libmil: the library's version. */
#ifndef MIL_VERSION_H
#define MIL_VERSION_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Library version string, e.g. "0.1.0" (static storage). */
MIL_API const char *mil_version(void);

#ifdef __cplusplus
}
#endif
#endif
