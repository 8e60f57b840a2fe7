/* Shared declarations of the `mil` command-line tool. Each subcommand lives in
 * its own cmd_<name>.c and is listed in main.c's command table. */
#ifndef MIL_CLI_H
#define MIL_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "mil/mil.h"

/* Exit statuses: 0 success, 1 invalid input / failed check, 2 usage error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Prints the messages of d to stderr, "mil: error: ..." / "mil: warning: ...":
 * every error; each warning text once, at most 3 of one kind (same text but
 * for names and numbers) followed by "... and N more like it". */
void cli_print_diag(const mil_diag *d);
/* s (a name, op type or string from a model) as it may reach a terminal:
 * itself when it is printable UTF-8, else escaped (mil_escaped) into one of
 * eight rotating static buffers, so a few may share one printf. */
const char *cli_esc(const char *s);
/* As cli_print_diag; warnings and notes only when `warnings` (not --quiet). */
void cli_print_diag_ex(const mil_diag *d, bool warnings);
/* True when argv[i] is -h or --help. */
bool cli_is_help(const char *arg);
/* Prints "mil: <msg>\nTry 'mil <cmd> --help'." to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `mil info --weights`: prints get_weights_metadata's report of p's const
 * weights of at least weight_threshold elements (cmd_compress.c). */
int cli_print_weights(mil_program *p, long long weight_threshold);

#endif
