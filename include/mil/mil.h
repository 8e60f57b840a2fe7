/* libmil umbrella header: read, validate, optimize, run and write Core ML
 * "ML Program" (MIL) models. Include this, or the area headers it lists. */
#ifndef MIL_MIL_H
#define MIL_MIL_H

#include "status.h"
#include "types.h"
#include "value.h"
#include "ir.h"
#include "text.h"
#include "blob.h"
#include "npy.h"
#include "ops.h"
#include "version.h"

#endif
