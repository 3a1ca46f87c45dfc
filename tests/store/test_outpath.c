/* test_outpath.c - unit tests of src/outpath.c: where and how output files
 * are written (symlinks, devices, FIFOs, temporary files). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sp_h5.h"
#include "sp_outpath.h"
#include "sp_profile.h"

#define assert_ok(call, err) do { \
	if ((call) != SP_OK) \
		fail_msg("%s", (err)->msg); \
} while (0)

static char dir[64];
static char pathbuf[8][512];

/* A path inside the test's temporary folder (eight live at a time). */
static const char *tpath(const char *name)
{
	static int next;
	char *p = pathbuf[next++ % 8];
	snprintf(p, sizeof pathbuf[0], "%s/%s", dir, name);
	return p;
}

static void remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char sub[1024];
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			remove_tree(sub);
		}
		if (d)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_outpath.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

/* Entries in the folder whose name contains ".tmp.". */
static int count_tmp(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void write_all(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void put_file(const char *path, const char *s, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	write_all(fd, s);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static char *slurp(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Writes s to path through the module and commits. */
static enum sp_err write_through(const char *path, int flags, const char *s, struct sp_error *err)
{
	struct sp_outpath o;
	enum sp_err rc = sp_outpath_open(&o, path, flags, err);
	if (rc != SP_OK)
		return rc;
	write_all(o.fd, s);
	return sp_outpath_commit(&o, err);
}

static void test_new_file(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_outpath o;
	const char *path = tpath("new.csv");
	mode_t mask = umask(022);
	assert_ok(sp_outpath_open(&o, path, 0, &err), &err);
	assert_int_equal(o.kind, SP_OUTPATH_NEW);
	assert_non_null(o.tmp);
	char want[600];
	snprintf(want, sizeof want, "%s.tmp.%ld", path, (long)getpid());
	assert_string_equal(o.tmp, want);
	assert_int_equal(access(path, F_OK), -1);    /* nothing at the target yet */
	assert_int_equal(access(want, F_OK), 0);
	write_all(o.fd, "hello\n");
	assert_ok(sp_outpath_commit(&o, &err), &err);
	assert_null(o.path);
	assert_string_equal(slurp(path), "hello\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);   /* 0666 & ~umask */
	assert_int_equal(count_tmp(), 0);
	umask(mask);
	sp_outpath_abort(&o);                        /* after a commit: nothing */
	unlink(path);
}

static void test_replace_keeps_mode(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *path = tpath("old.csv");
	put_file(path, "old\n", 0600);
	assert_ok(write_through(path, 0, "new\n", &err), &err);
	assert_string_equal(slurp(path), "new\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(count_tmp(), 0);
	unlink(path);
}

static void test_symlinks_followed(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct stat st;
	const char *real = tpath("real.h5"), *link = tpath("link.h5"), *link2 = tpath("link2.h5");
	put_file(real, "old\n", 0644);
	assert_int_equal(symlink("real.h5", link), 0);     /* relative */
	assert_int_equal(symlink(link, link2), 0);         /* a chain, absolute */
	assert_ok(write_through(link2, 0, "via chain\n", &err), &err);
	assert_int_equal(lstat(link2, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_string_equal(slurp(real), "via chain\n");
	assert_int_equal(count_tmp(), 0);

	/* A dangling symlink: the file it names is created, the link stays. */
	const char *sub = tpath("sub"), *dang = tpath("dangling.h5"), *made = tpath("sub/made.h5");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(symlink("sub/made.h5", dang), 0);
	enum sp_outpath_kind kind = SP_OUTPATH_DIR;
	assert_ok(sp_outpath_check(dang, 0, &kind, &err), &err);
	assert_int_equal(kind, SP_OUTPATH_NEW);
	assert_ok(write_through(dang, 0, "made\n", &err), &err);
	assert_int_equal(lstat(dang, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_string_equal(slurp(made), "made\n");

	/* A dangling symlink into a missing folder: one error, nothing made. */
	const char *nowhere = tpath("nowhere.h5");
	assert_int_equal(symlink("missing/x.h5", nowhere), 0);
	assert_int_equal(write_through(nowhere, 0, "x", &err), SP_EIO);
	assert_non_null(strstr(err.msg, "nowhere.h5' (a symlink to '"));
	assert_non_null(strstr(err.msg, "missing/x.h5'): No such file or directory"));

	/* A loop is refused. */
	const char *l1 = tpath("loop1"), *l2 = tpath("loop2");
	assert_int_equal(symlink("loop2", l1), 0);
	assert_int_equal(symlink("loop1", l2), 0);
	assert_int_equal(write_through(l1, 0, "x", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "symbolic links"));
	assert_int_equal(count_tmp(), 0);
	unlink(l1);
	unlink(l2);
	unlink(nowhere);
}

static void test_directory_and_socket_refused(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_outpath o;
	enum sp_outpath_kind kind;
	const char *d = tpath("adir");
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(sp_outpath_check(d, SP_OUTPATH_IN_PLACE, &kind, &err), SP_EINVAL);
	assert_int_equal(kind, SP_OUTPATH_DIR);
	assert_non_null(strstr(err.msg, "adir': it is a directory"));
	assert_int_equal(sp_outpath_open(&o, d, SP_OUTPATH_IN_PLACE, &err), SP_EINVAL);
	assert_int_equal(o.fd, -1);
	assert_null(o.path);
	rmdir(d);

	const char *sock = tpath("sock");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(sp_outpath_open(&o, sock, SP_OUTPATH_IN_PLACE, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "socket"));
	close(s);
	struct stat st;
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	unlink(sock);
	assert_int_equal(count_tmp(), 0);
}

static void test_fifo(void **state)
{
	(void)state;
	struct sp_error err = {0};
	enum sp_outpath_kind kind;
	const char *fifo = tpath("fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Without SP_OUTPATH_IN_PLACE (the profile): refused, never opened. */
	assert_int_equal(sp_outpath_check(fifo, 0, &kind, &err), SP_EINVAL);
	assert_int_equal(kind, SP_OUTPATH_FIFO);
	assert_non_null(strstr(err.msg, "FIFO"));
	/* In place: what is written reaches the reader. The reader opens
	 * first (non-blocking), so the writer's open does not wait. */
	int rd = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	assert_ok(write_through(fifo, SP_OUTPATH_IN_PLACE, "through the pipe\n", &err), &err);
	char buf[64] = {0};
	assert_int_equal(read(rd, buf, sizeof buf - 1), 17);
	assert_string_equal(buf, "through the pipe\n");
	close(rd);
	struct stat st;
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(count_tmp(), 0);
	unlink(fifo);
}

static void test_devices(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		/* mknod of a device node needs root (CI runs these as root). */
		fprintf(stderr, "test_devices: skipped: not root, cannot mknod a device node\n");
		skip();
	}
	struct sp_error err = {0};
	enum sp_outpath_kind kind;
	struct stat st;
	const char *null = tpath("null"), *zero = tpath("zero"), *link = tpath("null.link");
	assert_int_equal(mknod(null, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(mknod(zero, S_IFCHR | 0666, makedev(1, 5)), 0);
	assert_int_equal(symlink("null", link), 0);
	assert_int_equal(sp_outpath_check(null, 0, &kind, &err), SP_EINVAL);
	assert_int_equal(kind, SP_OUTPATH_NULL);
	assert_non_null(strstr(err.msg, "the null device"));
	assert_int_equal(sp_outpath_check(link, 0, &kind, &err), SP_EINVAL);
	assert_int_equal(kind, SP_OUTPATH_NULL);
	assert_int_equal(sp_outpath_check(zero, 0, &kind, &err), SP_EINVAL);
	assert_int_equal(kind, SP_OUTPATH_DEVICE);
	assert_non_null(strstr(err.msg, "a character device"));
	/* In place: written, never replaced. */
	assert_ok(write_through(null, SP_OUTPATH_IN_PLACE, "gone\n", &err), &err);
	assert_ok(write_through(link, SP_OUTPATH_IN_PLACE, "gone\n", &err), &err);
	assert_int_equal(lstat(null, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(count_tmp(), 0);
	unlink(link);
	unlink(null);
	unlink(zero);
}

/* A pid that no process has: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	return pid;
}

static void test_stale_tmp(void **state)
{
	(void)state;
	struct sp_error err = {0};
	const char *path = tpath("out.h5");
	char stale[600], live[600], other[600];
	pid_t dead = dead_pid();
	pid_t sleeper = fork();
	assert_true(sleeper >= 0);
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)dead);
	snprintf(live, sizeof live, "%s.tmp.%ld", path, (long)sleeper);
	snprintf(other, sizeof other, "%s.tmp.%ld", tpath("other.h5"), (long)dead);
	put_file(stale, "left by a killed run", 0644);
	put_file(live, "being written", 0644);
	put_file(other, "another output's", 0644);
	assert_ok(write_through(path, 0, "new\n", &err), &err);
	assert_int_equal(access(stale, F_OK), -1);      /* removed */
	assert_int_equal(access(live, F_OK), 0);        /* a live process's: kept */
	assert_int_equal(access(other, F_OK), 0);       /* not this output's */
	assert_string_equal(slurp(path), "new\n");

	/* The early check removes them too. */
	put_file(stale, "left again", 0644);
	assert_ok(sp_outpath_check(path, 0, NULL, &err), &err);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(live, F_OK), 0);
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	unlink(live);
	unlink(other);
	unlink(path);
	assert_int_equal(count_tmp(), 0);
}

static void test_abort_and_cleanup(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_outpath o, o2;
	const char *path = tpath("keep.csv");
	put_file(path, "good\n", 0644);

	assert_ok(sp_outpath_open(&o, path, 0, &err), &err);
	write_all(o.fd, "half");
	sp_outpath_abort(&o);
	assert_null(o.path);
	sp_outpath_abort(&o);                           /* twice is fine */
	assert_int_equal(count_tmp(), 0);
	assert_string_equal(slurp(path), "good\n");

	/* One writer per target in a process. */
	assert_ok(sp_outpath_open(&o, path, 0, &err), &err);
	assert_int_equal(sp_outpath_open(&o2, path, 0, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "already writing"));
	assert_int_equal(count_tmp(), 1);

	/* What a signal handler does: the temporary file goes; the commit
	 * then fails and the target stays as it was. */
	sp_outpath_cleanup_tmp();
	assert_int_equal(count_tmp(), 0);
	assert_int_equal(sp_outpath_commit(&o, &err), SP_EIO);
	assert_non_null(strstr(err.msg, "keep.csv"));
	assert_string_equal(slurp(path), "good\n");

	/* A zeroed one is fine to abort. */
	struct sp_outpath z;
	memset(&z, 0, sizeof z);
	sp_outpath_abort(&z);
	unlink(path);
}

static void test_check_probe(void **state)
{
	(void)state;
	struct sp_error err = {0};
	enum sp_outpath_kind kind;
	const char *path = tpath("probe.h5");
	assert_ok(sp_outpath_check(path, 0, &kind, &err), &err);
	assert_int_equal(kind, SP_OUTPATH_NEW);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(count_tmp(), 0);
	assert_int_equal(sp_outpath_check(tpath("missing/probe.h5"), 0, &kind, &err), SP_EIO);
	assert_non_null(strstr(err.msg, "missing/probe.h5': No such file or directory"));
	put_file(path, "x", 0644);
	assert_int_equal(sp_outpath_check(tpath("probe.h5/sub"), 0, &kind, &err), SP_EIO);
	assert_non_null(strstr(err.msg, "Not a directory"));
	assert_ok(sp_outpath_check(path, 0, &kind, &err), &err);
	assert_int_equal(kind, SP_OUTPATH_FILE);
	assert_string_equal(slurp(path), "x");
	assert_int_equal(sp_outpath_check("", 0, &kind, &err), SP_EINVAL);
	unlink(path);
}

/* A profile of one rank and no region at path, as a run writes it. */
static void put_profile(const char *path)
{
	struct sp_rank rk = {.rank = 0, .run_start_ns = 1, .run_end_ns = 2};
	struct sp_profile p = {.nranks = 1, .ranks = &rk};
	struct sp_error err = {0};
	assert_ok(sp_h5_write(&p, path, &err), &err);
}

/* SP_OUTPATH_PROFILE_ONLY: a non-empty file that is not a scope-profiler
 * profile (text, or HDF5 that is not a profile: the signature alone, after
 * a user block) is refused, a profile, an empty or a new file is not; so
 * sp_outpath_replaceable; sp_outpath_allow lets one path through;
 * sp_outpath_same_file follows symlinks. */
static void test_profile_only_and_same_file(void **state)
{
	(void)state;
	static const char sig[8] = {(char)0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	struct sp_error err = {0};
	enum sp_outpath_kind kind;
	const char *text = tpath("notes.txt"), *h5 = tpath("p.h5"), *ub = tpath("ub.h5");
	const char *empty = tpath("empty.h5"), *link = tpath("link.txt"), *prof = tpath("prof.h5");
	put_file(text, "my notes\n", 0644);
	put_file(empty, "", 0644);
	int fd = open(h5, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, sig, sizeof sig), (ssize_t)sizeof sig);
	close(fd);
	fd = open(ub, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(pwrite(fd, sig, sizeof sig, 1024), (ssize_t)sizeof sig);
	close(fd);
	assert_int_equal(symlink("notes.txt", link), 0);
	put_profile(prof);

	assert_int_equal(sp_outpath_check(text, SP_OUTPATH_PROFILE_ONLY, &kind, &err), SP_EEXIST);
	assert_non_null(strstr(err.msg, "not a scope-profiler profile"));
	assert_int_equal(sp_outpath_check(link, SP_OUTPATH_PROFILE_ONLY, &kind, &err), SP_EEXIST);
	assert_int_equal(sp_outpath_check(h5, SP_OUTPATH_PROFILE_ONLY, &kind, &err), SP_EEXIST);
	assert_int_equal(sp_outpath_check(ub, SP_OUTPATH_PROFILE_ONLY, &kind, &err), SP_EEXIST);
	assert_string_equal(slurp(text), "my notes\n");
	assert_ok(sp_outpath_check(text, 0, &kind, &err), &err);
	assert_ok(sp_outpath_check(prof, SP_OUTPATH_PROFILE_ONLY, &kind, &err), &err);
	assert_ok(sp_outpath_check(empty, SP_OUTPATH_PROFILE_ONLY, &kind, &err), &err);
	assert_ok(sp_outpath_check(tpath("new.h5"), SP_OUTPATH_PROFILE_ONLY, &kind, &err), &err);
	assert_int_equal(sp_outpath_replaceable(text, &err), SP_EEXIST);
	assert_non_null(strstr(err.msg, "not a scope-profiler profile"));
	assert_int_equal(sp_outpath_replaceable(h5, &err), SP_EEXIST);
	assert_ok(sp_outpath_replaceable(prof, &err), &err);
	assert_ok(sp_outpath_replaceable(empty, &err), &err);
	assert_ok(sp_outpath_replaceable(tpath("missing"), &err), &err);
	/* Allowed (run --force): the file the link leads to, by either name. */
	assert_ok(sp_outpath_allow(link, NULL, &err), &err);
	assert_ok(sp_outpath_check(text, SP_OUTPATH_PROFILE_ONLY, &kind, &err), &err);
	assert_ok(sp_outpath_replaceable(text, &err), &err);
	assert_int_equal(sp_outpath_replaceable(h5, &err), SP_EEXIST);
	assert_ok(sp_outpath_allow(link, text, &err), &err);   /* never notes.txt: the script */
	assert_int_equal(sp_outpath_replaceable(link, &err), SP_EEXIST);
	assert_ok(sp_outpath_allow(NULL, NULL, &err), &err);
	assert_int_equal(sp_outpath_replaceable(text, &err), SP_EEXIST);
	assert_int_equal(count_tmp(), 0);

	assert_true(sp_outpath_same_file(link, text));
	assert_false(sp_outpath_same_file(h5, text));
	assert_false(sp_outpath_same_file(tpath("missing"), text));

	char abs[PATH_MAX];
	assert_ok(sp_outpath_absolute("/a/b", abs, sizeof abs, &err), &err);
	assert_string_equal(abs, "/a/b");
	assert_ok(sp_outpath_absolute("x.h5", abs, sizeof abs, &err), &err);
	assert_true(abs[0] == '/' && strstr(abs, "/x.h5") != NULL);
	assert_int_equal(sp_outpath_absolute("x.h5", abs, 2, &err), SP_EINVAL);
	unlink(link);
	unlink(text);
	unlink(h5);
	unlink(ub);
	unlink(empty);
	unlink(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_file),
		cmocka_unit_test(test_replace_keeps_mode),
		cmocka_unit_test(test_symlinks_followed),
		cmocka_unit_test(test_directory_and_socket_refused),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_stale_tmp),
		cmocka_unit_test(test_abort_and_cleanup),
		cmocka_unit_test(test_check_probe),
		cmocka_unit_test(test_profile_only_and_same_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
