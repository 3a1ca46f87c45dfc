/* say.c - the one printer of the tool's error lines, "scope-profiler: CMD:
 * ..." (see sp_error.h). On its own so that the fuzz target can put a
 * checking one in its place. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sp_error.h"

void sp_one_line(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
}

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
	sp_one_line(line, strlen(line));
	fprintf(stderr, "%s\n", line);
}
