/* nolocks_standin.c - a stand-in for a file system without file locks, for
 * tests/e2e/test_file_locks.py: Lustre mounted without -o flock (the
 * default) and some NFS mounts fail flock() and fcntl() locks with ENOSYS,
 * and HDF5 then refuses to create or open any file there. These machines'
 * file systems all have locks, so this library, preloaded
 * (LD_PRELOAD), fails every lock on a file under $NOLOCKS_DIR the same way
 * and appends "flock PATH" or "fcntl PATH" to $NOLOCKS_LOG for each, so a
 * test sees that locks were tried there. Everything else goes through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Whether fd is a file under $NOLOCKS_DIR; its path into path. */
static int refused(int fd, char *path, size_t len)
{
	const char *dir = getenv("NOLOCKS_DIR");
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, len - 1);
	if (!dir || !dir[0] || n <= 0)
		return 0;
	path[n] = 0;
	size_t d = strlen(dir);
	return strncmp(path, dir, d) == 0 && (path[d] == '/' || path[d] == 0);
}

static void note(const char *what, const char *path)
{
	const char *log = getenv("NOLOCKS_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s %s\n", what, path);
		fclose(f);
	}
}

int flock(int fd, int op)
{
	static int (*real)(int, int);
	char path[PATH_MAX];
	if (refused(fd, path, sizeof path)) {
		note("flock", path);
		errno = ENOSYS;
		return -1;
	}
	if (!real)
		real = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
	return real(fd, op);
}

static int is_lock(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW ||
	       cmd == F_OFD_GETLK;
}

static int lock_or_pass(const char *name, int fd, int cmd, void *arg)
{
	char path[PATH_MAX];
	if (is_lock(cmd) && refused(fd, path, sizeof path)) {
		note("fcntl", path);
		errno = ENOSYS;
		return -1;
	}
	int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
	return real(fd, cmd, arg);
}

/* The third argument, an int or a pointer, is passed on as glibc's own
 * fcntl takes it (a pointer-sized slot). */
int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return lock_or_pass("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return lock_or_pass("fcntl64", fd, cmd, arg);
}
