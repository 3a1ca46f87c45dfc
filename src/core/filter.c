/* filter.c - region-name patterns (globs, or re: regular expressions) and
 * the --recursive own-code and name filters (sp_filter.h). */
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_filter.h"

enum sp_err sp_pattern_init(struct sp_pattern *p, const char *spec, struct sp_error *err)
{
	*p = (struct sp_pattern){0};
	if (!spec)
		return sp_error_set(err, SP_EINVAL, "no pattern given");
	size_t skip = strncmp(spec, SP_PATTERN_RE, strlen(SP_PATTERN_RE)) == 0 ? strlen(SP_PATTERN_RE) : 0;
	if (!(p->text = strdup(spec + skip)))
		return sp_error_set(err, SP_ENOMEM, "out of memory for pattern '%.200s'", spec);
	if (!skip)
		return SP_OK;
	int rc = regcomp(&p->re, p->text, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		char why[256];
		regerror(rc, &p->re, why, sizeof why);
		free(p->text);
		p->text = NULL;
		/* The pattern may be long: keep the message on one line, within msg. */
		return sp_error_set(err, rc == REG_ESPACE ? SP_ENOMEM : SP_EINVAL,
				    "invalid regular expression '%.200s': %s", spec, why);
	}
	p->regex = 1;
	return SP_OK;
}

int sp_pattern_match(const struct sp_pattern *p, const char *name)
{
	if (p->regex)
		return regexec(&p->re, name, 0, NULL, 0) == 0;
	return fnmatch(p->text, name, 0) == 0;
}

void sp_pattern_free(struct sp_pattern *p)
{
	if (p->regex)
		regfree(&p->re);
	free(p->text);
	*p = (struct sp_pattern){0};
}

/* regex_t values are moved by realloc; glibc's and musl's regex_t hold only
 * pointers to their compiled program, never into themselves, so that is
 * safe. */
enum sp_err sp_pattern_push(struct sp_pattern **v, size_t *n, const char *spec, struct sp_error *err)
{
	if (*n >= SIZE_MAX / sizeof **v - 1)
		return sp_error_set(err, SP_ENOMEM, "too many patterns");
	struct sp_pattern p;
	enum sp_err rc = sp_pattern_init(&p, spec, err);
	if (rc != SP_OK)
		return rc;
	struct sp_pattern *grown = realloc(*v, (*n + 1) * sizeof *grown);
	if (!grown) {
		sp_pattern_free(&p);
		return sp_error_set(err, SP_ENOMEM, "out of memory for pattern '%.200s'", spec);
	}
	grown[(*n)++] = p;
	*v = grown;
	return SP_OK;
}

int sp_pattern_any(const struct sp_pattern *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (sp_pattern_match(&v[i], name))
			return 1;
	return 0;
}

void sp_pattern_clear(struct sp_pattern **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		sp_pattern_free(&(*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}

/* Whether path passes through an installed packages' folder. */
static int installed(const char *path)
{
	return strstr(path, "/site-packages/") || strstr(path, "/dist-packages/");
}

int sp_filter_own_code(const struct sp_filter *f, const char *filename)
{
	if (f->all)
		return 1;
	/* The program's own folder; not a virtual environment inside it. */
	for (size_t i = 0; i < f->nown; i++) {
		size_t n = strlen(f->own[i]);
		if (n && strncmp(filename, f->own[i], n) == 0 && !installed(filename + n - 1))
			return 1;
	}
	/* <frozen importlib._bootstrap>, <string>, <stdin>, exec'd code; but
	 * an IPython cell (<ipython-input-N-HASH>, the terminal's) is the user's */
	if (filename[0] == '\0' || (filename[0] == '<' && strncmp(filename, "<ipython-input-", 15) != 0))
		return 0;
	if (installed(filename))
		return 0;
	for (size_t i = 0; i < f->nforeign; i++) {
		size_t n = strlen(f->foreign[i]);
		if (n && strncmp(filename, f->foreign[i], n) == 0)
			return 0;
	}
	return 1;
}

int sp_filter_name(const struct sp_filter *f, const char *name)
{
	if (f->ninclude && !sp_pattern_any(f->include, f->ninclude, name))
		return 0;
	return !sp_pattern_any(f->exclude, f->nexclude, name);
}

void sp_filter_clear(struct sp_filter *f)
{
	for (size_t i = 0; i < f->nforeign; i++)
		free(f->foreign[i]);
	free(f->foreign);
	f->foreign = NULL;
	f->nforeign = 0;
	for (size_t i = 0; i < f->nown; i++)
		free(f->own[i]);
	free(f->own);
	f->own = NULL;
	f->nown = 0;
	sp_pattern_clear(&f->include, &f->ninclude);
	sp_pattern_clear(&f->exclude, &f->nexclude);
	f->all = 0;
}
