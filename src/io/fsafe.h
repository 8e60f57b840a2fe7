/* Opening the files a model names without being led astray: only regular
 * files are opened (a FIFO, device or directory is an error, never a
 * blocking open), and a path may be confined to a root directory (the
 * package, the .mlmodel's directory, the text file's directory for @blob):
 * it is resolved with realpath(3), symlinks included, and refused when the
 * result lies outside the root. Shared by model.c, package.c, blob_read.c,
 * proto_type.c and text_parse_sym.c. Not part of the public API. */
#ifndef MIL_IO_FSAFE_H
#define MIL_IO_FSAFE_H

#include <sys/stat.h>

#include "mil/blob.h"
#include "mil/status.h"

#if defined(__GNUC__)
#define IO_FSAFE_HIDDEN __attribute__((visibility("hidden")))
#else
#define IO_FSAFE_HIDDEN
#endif

/* Opens path read-only if it is a regular file: the open does not block
 * (O_NONBLOCK, cleared again afterwards) and fstat decides. `what` names
 * the file in messages ("weight file", "model file", ...). root, when not
 * NULL, is a canonical directory (io_fs_root) the resolved path must lie
 * in. Returns the descriptor, or -1 with *st set and the reason in d
 * (MIL_ERR_IO: cannot open / resolve, not a regular file, outside root).
 * *sb (may be NULL) receives the file's status. */
IO_FSAFE_HIDDEN int io_fs_open_regular(const char *path, const char *root, const char *what, struct stat *sb,
                                       mil_status *st, mil_diag *d);

/* The canonical form of directory `dir` (realpath), malloc'ed; NULL when it
 * cannot be resolved. */
IO_FSAFE_HIDDEN char *io_fs_root(const char *dir);

/* Checks that path resolves inside root (canonical). MIL_OK, or MIL_ERR_IO
 * with "<path>: <what> resolves to <real>, outside <root>" (or the reason
 * it cannot be resolved). *real (may be NULL) receives the malloc'ed
 * resolved path on success. */
IO_FSAFE_HIDDEN mil_status io_fs_check_inside(const char *path, const char *root, const char *what, char **real,
                                              mil_diag *d);

/* mil_blob_file_open confined to root (canonical directory; NULL: none). */
IO_FSAFE_HIDDEN mil_status io_blob_file_open_in(const char *path, const char *root, mil_blob_file **out, mil_diag *d);

/* ---- temporaries of a save (model.c) ---- */

/* Registers the paths a save in progress has created and not yet moved
 * into place (files and directories, in removal order) so that
 * mil_save_remove_temporaries can remove them when the process is
 * interrupted. Returns a slot (>= 0), or -1 when the table is full (then
 * nothing is removed on a signal). paths are copied. */
IO_FSAFE_HIDDEN int io_tmp_register(const char *const *paths, int n);
/* Forgets a slot (the temporaries are in place or removed). */
IO_FSAFE_HIDDEN void io_tmp_unregister(int slot);

#endif
