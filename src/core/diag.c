/* Diagnostics sink and status names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/status.h"

const char *mil_status_str(mil_status s) {
  switch (s) {
  case MIL_OK: return "ok";
  case MIL_ERR_PARSE: return "parse error";
  case MIL_ERR_IO: return "I/O error";
  case MIL_ERR_FORMAT: return "format error";
  case MIL_ERR_TYPE: return "type error";
  case MIL_ERR_INVALID: return "invalid";
  case MIL_ERR_NOMEM: return "out of memory";
  case MIL_ERR_UNSUPPORTED: return "unsupported";
  case MIL_ERR_NOT_FOUND: return "not found";
  }
  return "unknown status";
}

void mil_diag_init(mil_diag *d) { memset(d, 0, sizeof *d); }

void mil_diag_clear(mil_diag *d) {
  if (!d) return;
  for (size_t i = 0; i < d->count; i++) free(d->msgs[i].text);
  free(d->msgs);
  size_t keep = d->max_msgs;
  memset(d, 0, sizeof *d);
  d->max_msgs = keep;
}

mil_status mil_diag_vadd(mil_diag *d, mil_severity sev, const char *fmt, va_list ap) {
  mil_status ret = sev == MIL_SEV_ERROR ? MIL_ERR_INVALID : MIL_OK;
  if (!d) return ret;
  if (sev == MIL_SEV_ERROR) d->n_errors++;
  else if (sev == MIL_SEV_WARNING) d->n_warnings++;
  size_t max = d->max_msgs ? d->max_msgs : 1000;
  if (d->count >= max) return ret;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return ret;
  char *text = malloc((size_t)n + 1);
  if (!text) return ret;
  vsnprintf(text, (size_t)n + 1, fmt, ap);
  if (d->count == d->cap) {
    size_t nc = d->cap ? d->cap * 2 : 8;
    mil_diag_msg *nm = realloc(d->msgs, nc * sizeof *nm);
    if (!nm) {
      free(text);
      return ret;
    }
    d->msgs = nm;
    d->cap = nc;
  }
  d->msgs[d->count].severity = sev;
  d->msgs[d->count].text = text;
  d->count++;
  return ret;
}

mil_status mil_diag_add(mil_diag *d, mil_severity sev, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mil_status s = mil_diag_vadd(d, sev, fmt, ap);
  va_end(ap);
  return s;
}

mil_status mil_diag_error(mil_diag *d, mil_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mil_diag_vadd(d, MIL_SEV_ERROR, fmt, ap);
  va_end(ap);
  return st;
}

const char *mil_diag_first_error(const mil_diag *d) {
  if (!d) return NULL;
  for (size_t i = 0; i < d->count; i++)
    if (d->msgs[i].severity == MIL_SEV_ERROR) return d->msgs[i].text;
  return NULL;
}
