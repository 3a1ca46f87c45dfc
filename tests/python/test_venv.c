/* test_venv.c - unit tests of sp_venv_find, the virtual environment a run
 * starts in, on environments made in a temporary folder: the order (the
 * executable's own, VIRTUAL_ENV, PATH), pyvenv.cfg as python -m venv and
 * virtualenv write it, and the environments that cannot be used. (The
 * interpreter started in them: tests/e2e/test_venv.py.) */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sp_venv.h"

static char root[PATH_MAX];

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* root/NAME: a venv whose pyvenv.cfg is cfg (NULL: none), with bin/python3
 * when python is set. Its path into out. */
static void make_env(const char *name, const char *cfg, int python, char *out, size_t len)
{
	char p[PATH_MAX + 32];
	assert_true(snprintf(out, len, "%s/%s", root, name) < (int)len);
	assert_int_equal(mkdir(out, 0700), 0);
	snprintf(p, sizeof p, "%s/bin", out);
	assert_int_equal(mkdir(p, 0700), 0);
	if (cfg) {
		snprintf(p, sizeof p, "%s/pyvenv.cfg", out);
		write_file(p, cfg, 0600);
	}
	if (python) {
		snprintf(p, sizeof p, "%s/bin/python3", out);
		write_file(p, "#!/bin/sh\n", 0700);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "%s/sp-venv-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static enum sp_venv_found find_for(const char *embedded, const char *venv, struct sp_venv *v, char *err)
{
	struct sp_venv_where w = {.virtual_env = venv, .embedded = embedded};
	err[0] = '\0';
	return sp_venv_find(&w, 3, 11, v, err, 1024);
}

static enum sp_venv_found find(const char *self, const char *venv, const char *path, struct sp_venv *v,
			       char *err)
{
	struct sp_venv_where w = {.self = self, .virtual_env = venv, .path = path};
	err[0] = '\0';
	return sp_venv_find(&w, 3, 11, v, err, 1024);
}

static void test_order_self_then_virtual_env_then_path(void **state)
{
	(void)state;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], self[PATH_MAX + 32], path[3 * PATH_MAX], err[1024];
	struct sp_venv v;
	make_env("a", "home = /usr/bin\nversion = 3.11.2\n", 1, a, sizeof a);
	make_env("b", "home = /usr/bin\nversion = 3.11.9\n", 1, b, sizeof b);
	make_env("c", "home=/usr/bin\nversion_info = 3.11.4.final.0\n", 1, c, sizeof c);
	snprintf(self, sizeof self, "%s/bin/scope-profiler", a);
	snprintf(path, sizeof path, "/nonexistent:%s/bin:/usr/bin", c);

	assert_int_equal(find(self, b, path, &v, err), SP_VENV_FOUND);
	assert_string_equal(v.dir, a);
	assert_true(strstr(v.python, "/a/bin/python3") != NULL);
	assert_int_equal(find("/usr/bin/scope-profiler", b, path, &v, err), SP_VENV_FOUND);
	assert_string_equal(v.dir, b);
	assert_string_equal(v.how, "VIRTUAL_ENV");
	/* virtualenv's version_info, no spaces around '=' */
	assert_int_equal(find("/usr/bin/scope-profiler", NULL, path, &v, err), SP_VENV_FOUND);
	assert_string_equal(v.dir, c);
	assert_int_equal(find("/usr/bin/scope-profiler", "", "/usr/bin:/bin", &v, err), SP_VENV_NONE);
	assert_int_equal(find(NULL, NULL, NULL, &v, err), SP_VENV_NONE);
}

static void test_first_python3_on_path_decides(void **state)
{
	(void)state;
	char a[PATH_MAX], plain[PATH_MAX], path[2 * PATH_MAX + 8], err[1024];
	struct sp_venv v;
	make_env("d", "version = 3.11.2\n", 1, a, sizeof a);
	make_env("plain", NULL, 1, plain, sizeof plain);   /* a python3 of no venv */
	snprintf(path, sizeof path, "%s/bin:%s/bin", plain, a);
	assert_int_equal(find(NULL, NULL, path, &v, err), SP_VENV_NONE);
	snprintf(path, sizeof path, "%s/bin:%s/bin", a, plain);
	assert_int_equal(find(NULL, NULL, path, &v, err), SP_VENV_FOUND);
	assert_string_equal(v.dir, a);
}

static void test_unusable_environments_say_why(void **state)
{
	(void)state;
	char e[PATH_MAX], f[PATH_MAX], g[PATH_MAX], err[1024];
	struct sp_venv v;
	make_env("e", "home = /x\nversion = 3.12.1\n", 1, e, sizeof e);
	assert_int_equal(find(NULL, e, NULL, &v, err), SP_VENV_WRONG);
	assert_non_null(strstr(err, "is Python 3.12, and this scope-profiler embeds Python 3.11"));
	assert_non_null(strstr(err, "make PYTHON="));
	make_env("f", "version = 3.11.2\n", 0, f, sizeof f);   /* its python is gone */
	assert_int_equal(find(NULL, f, NULL, &v, err), SP_VENV_WRONG);
	assert_non_null(strstr(err, "no working bin/python3"));
	make_env("g", NULL, 1, g, sizeof g);                    /* VIRTUAL_ENV not a venv */
	assert_int_equal(find(NULL, g, NULL, &v, err), SP_VENV_WRONG);
	assert_non_null(strstr(err, "no pyvenv.cfg"));
}

/* An environment of the same major.minor made from another installation
 * (pyenv's 3.11.7 beside the embedded Debian 3.11.2) would start the
 * embedded interpreter on the other one's standard library: refused. The
 * embedded python's own installation is taken as `home` names it, through
 * a symlinked folder, or by a python3 in home that resolves to it. */
static void test_environment_of_another_installation_is_refused(void **state)
{
	(void)state;
	char base[PATH_MAX], other[PATH_MAX], link[PATH_MAX + 16], exe[PATH_MAX + 32], cfg[3 * PATH_MAX];
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], d[PATH_MAX], err[1024];
	struct sp_venv v;
	make_env("base", NULL, 1, base, sizeof base);     /* base/bin/python3: the embedded one */
	make_env("other", NULL, 1, other, sizeof other);
	snprintf(exe, sizeof exe, "%s/bin/python3", base);
	snprintf(link, sizeof link, "%s/base-link", root);
	assert_int_equal(symlink(base, link), 0);

	snprintf(cfg, sizeof cfg, "home = %s/bin\nversion = 3.11.2\n", base);
	make_env("same", cfg, 1, a, sizeof a);
	assert_int_equal(find_for(exe, a, &v, err), SP_VENV_FOUND);
	snprintf(cfg, sizeof cfg, "home = %s/bin\nversion = 3.11.7\n", link);
	make_env("via-link", cfg, 1, b, sizeof b);
	assert_int_equal(find_for(exe, b, &v, err), SP_VENV_FOUND);
	make_env("no-home", "version = 3.11.2\n", 1, d, sizeof d);
	assert_int_equal(find_for(exe, d, &v, err), SP_VENV_FOUND);
	/* made by a symlink to the embedded python in a folder of its own:
	 * pyvenv.cfg's executable (python -m venv) names the real one */
	char lonely[PATH_MAX + 16], e2[PATH_MAX], e3[PATH_MAX], pylink[PATH_MAX + 32];
	snprintf(lonely, sizeof lonely, "%s/lonely", root);
	assert_int_equal(mkdir(lonely, 0700), 0);
	snprintf(cfg, sizeof cfg, "home = %s\nversion = 3.11.2\nexecutable = %s\n", lonely, exe);
	make_env("by-executable", cfg, 1, e2, sizeof e2);
	assert_int_equal(find_for(exe, e2, &v, err), SP_VENV_FOUND);
	/* or home holds a `python` that resolves to it */
	snprintf(pylink, sizeof pylink, "%s/python", lonely);
	assert_int_equal(symlink(exe, pylink), 0);
	snprintf(cfg, sizeof cfg, "home = %s\nversion = 3.11.2\n", lonely);
	make_env("by-home-python", cfg, 1, e3, sizeof e3);
	assert_int_equal(find_for(exe, e3, &v, err), SP_VENV_FOUND);

	snprintf(cfg, sizeof cfg, "home = %s/bin\nversion = 3.11.7\n", other);
	make_env("another", cfg, 1, c, sizeof c);
	assert_int_equal(find_for(exe, c, &v, err), SP_VENV_WRONG);
	assert_non_null(strstr(err, "was made from the Python in"));
	assert_non_null(strstr(err, "/other/bin, and this scope-profiler embeds"));
	assert_non_null(strstr(err, "make PYTHON="));
	/* without the embedded python's path (the unit tests above): taken */
	assert_int_equal(find_for(NULL, c, &v, err), SP_VENV_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_self_then_virtual_env_then_path),
		cmocka_unit_test(test_first_python3_on_path_decides),
		cmocka_unit_test(test_unusable_environments_say_why),
		cmocka_unit_test(test_environment_of_another_installation_is_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
