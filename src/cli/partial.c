/* partial.c - the one line the commands that read profiles print about a
 * partial one (sp_cmd_partial, sp_cmd.h): shown as it stands, and said so. */
#include <stdio.h>

#include "sp_cmd.h"
#include "sp_render.h"

void sp_cmd_partial(const char *cmd, const char *path, const struct sp_profile *p)
{
	char line[1024];
	if (!sp_render_partial(line, sizeof line, p, path))
		return;
	fflush(stdout);
	fprintf(stderr, "scope-profiler: %s: %s\n", cmd, line);
}
