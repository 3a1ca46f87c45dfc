/* say.c - the one printer of the tool's error lines, "scope-profiler: CMD:
 * ..." (see sp_error.h). On its own so that the fuzz target can put a
 * checking one in its place. */
#include <stdarg.h>
#include <stdio.h>

#include "sp_error.h"

void sp_cmd_error(const char *cmd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	fflush(stdout);
	int n = snprintf(line, sizeof line, "scope-profiler: %s: ", cmd);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	/* One line: a control character a path or a name brought (a newline
	 * in a file name) is shown as '?', as the readers show it. */
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	fprintf(stderr, "%s\n", line);
}
