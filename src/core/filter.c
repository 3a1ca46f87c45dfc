/* filter.c - the --recursive own-code and name filters (sp_filter.h). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "sp_filter.h"

int sp_filter_own_code(const struct sp_filter *f, const char *filename)
{
	if (f->all)
		return 1;
	/* <frozen importlib._bootstrap>, <string>, <stdin>, exec'd code */
	if (filename[0] == '<' || filename[0] == '\0')
		return 0;
	if (strstr(filename, "/site-packages/") || strstr(filename, "/dist-packages/"))
		return 0;
	for (size_t i = 0; i < f->nforeign; i++) {
		size_t n = strlen(f->foreign[i]);
		if (n && strncmp(filename, f->foreign[i], n) == 0)
			return 0;
	}
	return 1;
}

static int any_match(char **globs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], name, 0) == 0)
			return 1;
	return 0;
}

int sp_filter_name(const struct sp_filter *f, const char *name)
{
	if (f->ninclude && !any_match(f->include, f->ninclude, name))
		return 0;
	return !any_match(f->exclude, f->nexclude, name);
}

static void free_list(char ***v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}

void sp_filter_clear(struct sp_filter *f)
{
	free_list(&f->foreign, &f->nforeign);
	free_list(&f->include, &f->ninclude);
	free_list(&f->exclude, &f->nexclude);
	f->all = 0;
}
