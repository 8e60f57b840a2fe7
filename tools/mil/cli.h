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

/* Prints every message of d to stderr, "mil: error: ..." / "mil: warning: ...". */
void cli_print_diag(const mil_diag *d);
/* s (a name, op type or string from a model) as it may reach a terminal:
 * itself when it is printable UTF-8, else escaped (mil_escaped) into one of
 * eight rotating static buffers, so a few may share one printf. */
const char *cli_esc(const char *s);
/* True when argv[i] is -h or --help. */
bool cli_is_help(const char *arg);
/* Prints "mil: <msg>\nTry 'mil <cmd> --help'." to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
