/* outpath.c - where and how an output file is written (see sp_outpath.h):
 * symlinks followed, devices and FIFOs written in place or refused, files
 * replaced through TARGET.tmp.PID and rename(2). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sp_h5.h"
#include "sp_outpath.h"

#define MAX_HOPS 40                /* symlinks followed, as the kernel's limit */
#define NSLOTS 16                  /* temporary files being written at once */

/* The temporary files this process is writing, for sp_outpath_cleanup_tmp:
 * a slot is 0 free, 1 being filled or emptied, 2 holding a path. A signal
 * handler only reads slots in state 2; threads claim slots by CAS. */
static struct {
	atomic_int state[NSLOTS];
	pid_t pid[NSLOTS];             /* the writer's: a forked child never removes them */
	char path[NSLOTS][PATH_MAX];
	atomic_int atexit_done;
} reg;

static int reg_add(const char *tmp)
{
	if (strlen(tmp) >= PATH_MAX)
		return -1;
	if (!atomic_exchange(&reg.atexit_done, 1))
		atexit(sp_outpath_cleanup_tmp);
	for (int i = 0; i < NSLOTS; i++) {
		int free_slot = 0;
		if (atomic_compare_exchange_strong(&reg.state[i], &free_slot, 1)) {
			reg.pid[i] = getpid();
			strcpy(reg.path[i], tmp);
			atomic_store(&reg.state[i], 2);
			return i;
		}
	}
	return -1;                     /* all busy: written, just not cleaned on a signal */
}

static void reg_remove(int slot)
{
	if (slot >= 0 && slot < NSLOTS)
		atomic_store(&reg.state[slot], 0);
}

/* Whether this process is writing tmp now (another writer of the same target). */
static int reg_holds(const char *tmp)
{
	pid_t me = getpid();
	for (int i = 0; i < NSLOTS; i++)
		if (atomic_load(&reg.state[i]) == 2 && reg.pid[i] == me && strcmp(reg.path[i], tmp) == 0)
			return 1;
	return 0;
}

void sp_outpath_cleanup_tmp(void)
{
	pid_t me = getpid();
	for (int i = 0; i < NSLOTS; i++)
		if (atomic_load(&reg.state[i]) == 2 && reg.pid[i] == me)
			unlink(reg.path[i]);
}

/* ---- following the path ------------------------------------------------- */

static char *join_dir(const char *link, const char *text)
{
	if (text[0] == '/')
		return strdup(text);
	const char *slash = strrchr(link, '/');
	size_t dlen = slash ? (size_t)(slash - link) + 1 : 0;
	char *out = malloc(dlen + strlen(text) + 1);
	if (out) {
		memcpy(out, link, dlen);
		strcpy(out + dlen, text);
	}
	return out;
}

static const char *kind_name(enum sp_outpath_kind k, const struct stat *st)
{
	switch (k) {
	case SP_OUTPATH_DIR: return "a directory";
	case SP_OUTPATH_NULL: return "the null device";
	case SP_OUTPATH_DEVICE: return S_ISBLK(st->st_mode) ? "a block device" : "a character device";
	case SP_OUTPATH_FIFO: return "a FIFO (a pipe)";
	case SP_OUTPATH_SOCKET: return "a socket";
	case SP_OUTPATH_STREAM: return "an open file descriptor (standard output or /dev/fd/N)";
	default: return "a file";
	}
}

/* "'path'", or "'path' (a symlink to 'target')" when a link led elsewhere. */
static void describe(char *buf, size_t len, const char *path, const char *target, int via_link)
{
	if (via_link && target)
		snprintf(buf, len, "'%s' (a symlink to '%s')", path, target);
	else
		snprintf(buf, len, "'%s'", path);
}

/* Whether folder (a resolved path) is a process's descriptor folder:
 * /proc/PID/fd or /proc/PID/task/TID/fd; *own when PID is this process. */
static int fd_folder(const char *folder, int *own)
{
	char *end;
	if (strncmp(folder, "/proc/", 6) != 0)
		return 0;
	long pid = strtol(folder + 6, &end, 10);
	if (end == folder + 6)
		return 0;
	if (strncmp(end, "/task/", 6) == 0) {
		const char *tid = end + 6;
		strtol(tid, &end, 10);
		if (end == tid)
			return 0;
	}
	*own = pid == (long)getpid();
	return strcmp(end, "/fd") == 0;
}

/* The descriptor N when path, or a symlink on its way, names a process's
 * open descriptor through /proc (/dev/stdout -> /proc/self/fd/1, /dev/fd/N):
 * such a "file" is whatever the descriptor holds, never to be replaced.
 * -1 otherwise; *own when the descriptor is this process's. */
static int fd_link(const char *path, int *own)
{
	char *cur = strdup(path);
	for (int hops = 0; cur && hops <= MAX_HOPS; hops++) {
		char text[PATH_MAX], *slash = strrchr(cur, '/');
		char *folder = NULL;
		if (slash) {
			*slash = '\0';
			folder = realpath(slash == cur ? "/" : cur, NULL);
			*slash = '/';
		}
		if (folder && fd_folder(folder, own)) {
			char *end;
			long n = strtol(slash + 1, &end, 10);
			int fd = *end || end == slash + 1 || n < 0 || n > INT_MAX ? -1 : (int)n;
			free(folder);
			free(cur);
			return fd;
		}
		free(folder);
		struct stat lst;
		ssize_t len;
		if (lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode) ||
		    (len = readlink(cur, text, sizeof text - 1)) < 0)
			break;
		text[len] = '\0';
		char *next = join_dir(cur, text);
		free(cur);
		cur = next;
	}
	free(cur);
	return -1;
}

/* path names nothing, or a dangling symlink: follows its chain (MAX_HOPS
 * links at most) to the name of the file to create, into o->target. */
static enum sp_err follow_links(struct sp_outpath *o, const char *path, struct sp_error *err)
{
	struct stat lst;
	char *cur = strdup(path);
	for (int hops = 0; cur; hops++) {
		char text[PATH_MAX];
		if (lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode)) {
			o->target = cur;
			return SP_OK;
		}
		if (hops == MAX_HOPS) {
			free(cur);
			return sp_error_set(err, SP_EINVAL, "'%s': %s", path, strerror(ELOOP));
		}
		ssize_t n = readlink(cur, text, sizeof text - 1);
		if (n < 0) {
			int e = errno;
			free(cur);
			return sp_error_set(err, SP_EIO, "'%s': %s", path, strerror(e));
		}
		text[n] = '\0';
		char *next = join_dir(cur, text);
		free(cur);
		cur = next;
	}
	return sp_error_set(err, SP_ENOMEM, "'%s': out of memory", path);
}

/* sp_outpath_allow's path, absolute (NULL: none), and the file it must not
 * lead to (never_dev 0: none). */
static char *allowed;
static dev_t never_dev;
static ino_t never_ino;

/* Whether target (symlinks followed) is what the allowed path leads to now,
 * and not the file it must never replace. */
static int allowed_here(const char *target)
{
	struct stat st;
	char *rp = allowed ? realpath(allowed, NULL) : NULL;
	int same = rp && strcmp(rp, target) == 0;
	free(rp);
	if (same && never_dev && stat(target, &st) == 0 && st.st_dev == never_dev && st.st_ino == never_ino)
		same = 0;
	return same;
}

enum sp_err sp_outpath_allow(const char *path, const char *never, struct sp_error *err)
{
	char abs[PATH_MAX];
	struct stat st;
	free(allowed);
	allowed = NULL;
	never_dev = 0;
	if (!path)
		return SP_OK;
	if (never && stat(never, &st) == 0) {
		never_dev = st.st_dev;
		never_ino = st.st_ino;
	}
	enum sp_err rc = sp_outpath_absolute(path, abs, sizeof abs, err);
	if (rc == SP_OK && !(allowed = strdup(abs)))
		rc = sp_error_set(err, SP_ENOMEM, "'%s': out of memory", path);
	return rc;
}

/* Whether the existing file path is a profile: 1, 0, or -1 when that
 * cannot be told for want of a descriptor or of memory (said in err): no
 * reason to call it something else. */
static int is_profile(const char *path, struct sp_error *err)
{
	/* The check holds a descriptor of the file while HDF5 opens its own. */
	int fd[2] = {open(path, O_RDONLY | O_CLOEXEC), -1};
	if (fd[0] >= 0)
		fd[1] = open(path, O_RDONLY | O_CLOEXEC);
	int e = errno, short_of = fd[1] < 0 && (e == EMFILE || e == ENFILE || e == ENOMEM);
	for (int i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	if (short_of) {
		sp_error_set(err, SP_EIO, "'%s': cannot tell whether it is a profile: %s", path, strerror(e));
		return -1;
	}
	return sp_h5_is_profile(path);
}

enum sp_err sp_outpath_replaceable(const char *path, struct sp_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return SP_OK;   /* nothing, or what the rename itself refuses */
	char *rp = realpath(path, NULL);
	if (!rp)
		return sp_error_set(err, SP_EIO, "'%s': %s", path, strerror(errno));
	int prof = allowed_here(rp) ? 1 : is_profile(rp, err);
	free(rp);
	if (prof < 0)
		return SP_EIO;
	return prof ? SP_OK : sp_error_set(err, SP_EEXIST, "'%s': it exists and is not a scope-profiler profile",
					   path);
}

/* Finds what path leads to: o->target, o->kind, *st (of the target when it
 * exists), *via_link. Refuses what flags do not allow. */
static enum sp_err resolve(struct sp_outpath *o, const char *path, int flags, struct stat *st,
			   int *via_link, struct sp_error *err)
{
	struct stat lst;
	char where[2 * PATH_MAX + 64];

	*via_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
	memset(st, 0, sizeof *st);
	if (*via_link && (flags & SP_OUTPATH_LINK_REPLACED)) {
		o->kind = SP_OUTPATH_NEW;   /* the rename replaces the link itself */
		*via_link = 0;
		if (!(o->target = strdup(path)))
			return sp_error_set(err, SP_ENOMEM, "'%s': out of memory", path);
		return SP_OK;
	}
	int own = 0, fdn = fd_link(path, &own);
	if (stat(path, st) == 0) {
		if (fdn >= 0 && !S_ISDIR(st->st_mode) && !S_ISSOCK(st->st_mode) && !S_ISBLK(st->st_mode)) {
			o->kind = SP_OUTPATH_STREAM;
			o->stream_fd = own ? fdn : -1;
		} else if (S_ISREG(st->st_mode)) {
			o->kind = SP_OUTPATH_FILE;
			/* The temporary file goes beside the real file: the rename
			 * then replaces it, never the link that led there. */
			o->target = realpath(path, NULL);
			if (!o->target)
				return sp_error_set(err, errno == ENOMEM ? SP_ENOMEM : SP_EIO, "'%s': %s", path,
						    strerror(errno));
			if ((flags & SP_OUTPATH_PROFILE_ONLY) && st->st_size > 0 && !allowed_here(o->target)) {
				describe(where, sizeof where, path, o->target, *via_link);
				int prof = is_profile(o->target, err);
				if (prof < 0)
					return SP_EIO;
				if (!prof)
					return sp_error_set(err, SP_EEXIST,
							    "%s: it exists and is not a scope-profiler profile", where);
			}
			return SP_OK;
		} else if (S_ISDIR(st->st_mode))
			o->kind = SP_OUTPATH_DIR;
		else if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3))
			o->kind = SP_OUTPATH_NULL;
		else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
			o->kind = SP_OUTPATH_DEVICE;
		else if (S_ISFIFO(st->st_mode))
			o->kind = SP_OUTPATH_FIFO;
		else
			o->kind = SP_OUTPATH_SOCKET;
		/* Opened by the name given: /dev/stdout's /proc link reaches the
		 * pipe itself, which no resolved name would. */
		if (!(o->target = strdup(path)))
			return sp_error_set(err, SP_ENOMEM, "'%s': out of memory", path);
		describe(where, sizeof where, path, NULL, 0);
		if (o->kind == SP_OUTPATH_DIR)
			return sp_error_set(err, SP_EINVAL, "%s: it is a directory", where);
		if (o->kind == SP_OUTPATH_SOCKET)
			return sp_error_set(err, SP_EINVAL, "%s: it is a socket, which cannot be opened for writing",
					    where);
		if (S_ISBLK(st->st_mode))
			return sp_error_set(err, SP_EINVAL, "%s: it is a block device (a disk), never written to",
					    where);
		if (!(flags & SP_OUTPATH_IN_PLACE))
			return sp_error_set(err, SP_EINVAL, "%s: it is %s, not a regular file, and is never replaced",
					    where, kind_name(o->kind, st));
		return SP_OK;
	}
	if (errno == ELOOP)
		return sp_error_set(err, SP_EINVAL, "'%s': %s", path, strerror(errno));
	if (errno != ENOENT)
		return sp_error_set(err, SP_EIO, "'%s': %s", path, strerror(errno));
	/* Nothing there, or a dangling symlink: its chain names the file to
	 * create. */
	o->kind = SP_OUTPATH_NEW;
	return follow_links(o, path, err);
}

/* ---- stale temporary files ---------------------------------------------- */

/* File systems whose files other hosts write too: a pid found there may be
 * a live process elsewhere, so nothing is removed on them. */
static int shared_fs(int dirfd)
{
	static const unsigned long magic[] = {
		0x6969,          /* NFS */
		0xFF534D42,      /* CIFS */
		0xFE534D42,      /* SMB2 */
		0x517B,          /* SMB */
		0x0BD00BD0,      /* Lustre */
		0x47504653,      /* GPFS */
		0x00C36400,      /* CephFS */
		0x19830326,      /* BeeGFS */
		0x5346414F,      /* AFS */
		0x65735546,      /* FUSE (sshfs, ...) */
		0x013111A8,      /* IBRIX */
		0x73757245,      /* Coda */
	};
	struct statfs sf;
	if (fstatfs(dirfd, &sf) != 0)
		return 1;
	for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
		if ((unsigned long)sf.f_type == magic[i])
			return 1;
	return 0;
}

/* Removes TARGET.tmp.PID files in target's folder whose PID is a process
 * that no longer exists (an earlier run killed while writing). */
static void remove_stale(const char *target)
{
	const char *slash = strrchr(target, '/');
	const char *base = slash ? slash + 1 : target;
	char dir[PATH_MAX];
	size_t dlen = slash ? (size_t)(slash - target) : 0;
	if (dlen >= sizeof dir)
		return;
	if (slash) {
		memcpy(dir, target, dlen);
		dir[dlen] = '\0';
		if (dlen == 0)
			strcpy(dir, "/");
	} else {
		strcpy(dir, ".");
	}
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t blen = strlen(base);
	pid_t me = getpid();
	struct dirent *e;
	if (shared_fs(dirfd(d)))
		goto out;
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0)
			continue;
		const char *digits = name + blen + 5;
		char *end;
		errno = 0;
		long pid = strtol(digits, &end, 10);
		struct stat st;
		if (!(digits[0] >= '1' && digits[0] <= '9') || *end || errno || pid > INT_MAX ||
		    pid == (long)me)
			continue;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		/* EPERM: alive, someone else's. Only "no such process" is dead. */
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			unlinkat(dirfd(d), name, 0);
	}
out:
	closedir(d);
}

/* ---- the public functions ------------------------------------------------ */

enum sp_err sp_outpath_absolute(const char *path, char *buf, size_t len, struct sp_error *err)
{
	char cwd[PATH_MAX];
	if (path[0] == '/') {
		if ((size_t)snprintf(buf, len, "%s", path) >= len)
			return sp_error_set(err, SP_EINVAL, "the path '%.200s...' is too long", path);
		return SP_OK;
	}
	if (!getcwd(cwd, sizeof cwd)) {
		/* ERANGE: strerror's "Numerical result out of range" says nothing useful */
		if (errno == ERANGE)
			return sp_error_set(err, SP_EINVAL,
					    "'%s' is relative and the working folder's path is too long "
					    "(longer than PATH_MAX, %d bytes)", path, PATH_MAX);
		return sp_error_set(err, SP_EIO, "'%s' is relative and the working folder cannot be found: %s",
				    path, strerror(errno));
	}
	if ((size_t)snprintf(buf, len, "%s/%s", cwd, path) >= len)
		return sp_error_set(err, SP_EINVAL, "the path '%s' is too long in the working folder '%.200s...'",
				    path, cwd);
	return SP_OK;
}

int sp_outpath_same_file(const char *path, const char *other)
{
	struct stat a, b;
	return path && other && stat(path, &a) == 0 && stat(other, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static void reset(struct sp_outpath *o)
{
	*o = (struct sp_outpath){.fd = -1, .slot = -1, .stream_fd = -1};
}

static void release(struct sp_outpath *o)
{
	free(o->path);
	free(o->target);
	free(o->tmp);
	reset(o);
}

static char *tmp_name(const char *target)
{
	size_t len = strlen(target) + 32;
	char *tmp = malloc(len);
	if (tmp)
		snprintf(tmp, len, "%s.tmp.%ld", target, (long)getpid());
	return tmp;
}

/* Creates o->tmp with O_EXCL (a stale one of an earlier process with our pid
 * is replaced, a live writer's in this process is not). */
static enum sp_err create_tmp(struct sp_outpath *o, const struct stat *st, int via_link,
			      struct sp_error *err)
{
	char where[2 * PATH_MAX + 64];
	describe(where, sizeof where, o->path, o->target, via_link);
	if (reg_holds(o->tmp))
		return sp_error_set(err, SP_EINVAL, "%s: this process is already writing it", where);
	for (int attempt = 0; attempt < 2; attempt++) {
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (o->fd >= 0)
			break;
		if (errno != EEXIST || attempt > 0 || unlink(o->tmp) != 0)
			return sp_error_set(err, errno == ENOMEM ? SP_ENOMEM : SP_EIO, "%s: %s", where,
					    strerror(errno));
	}
	if (o->kind == SP_OUTPATH_FILE) {
		/* The replacement keeps what the file it replaces allowed; a
		 * file system without owners or modes keeps the defaults. */
		int ok = geteuid() != 0 || fchown(o->fd, st->st_uid, st->st_gid) == 0;
		ok = fchmod(o->fd, st->st_mode & 0777) == 0 && ok;
		(void)ok;
	}
	o->slot = reg_add(o->tmp);
	return SP_OK;
}

/* A file's (or a new path's) write begins: o->tmp named, a dead process's
 * temporary file removed, ours created. */
static enum sp_err start_tmp(struct sp_outpath *o, const struct stat *st, int via_link,
			     struct sp_error *err)
{
	if (!(o->tmp = tmp_name(o->target)))
		return sp_error_set(err, SP_ENOMEM, "'%s': out of memory", o->path);
	remove_stale(o->target);
	return create_tmp(o, st, via_link, err);
}

enum sp_err sp_outpath_open(struct sp_outpath *o, const char *path, int flags, struct sp_error *err)
{
	struct stat st;
	int via_link = 0;
	enum sp_err rc;

	reset(o);
	if (!path || !path[0])
		return sp_error_set(err, SP_EINVAL, "an empty output path");
	if (!(o->path = strdup(path))) {
		rc = sp_error_set(err, SP_ENOMEM, "'%s': out of memory", path);
		goto fail;
	}
	if ((rc = resolve(o, path, flags, &st, &via_link, err)) != SP_OK)
		goto fail;
	if (o->kind != SP_OUTPATH_NEW && o->kind != SP_OUTPATH_FILE) {
		/* In place: no O_CREAT (a device that vanished is not made a
		 * file), no O_TRUNC; a FIFO waits for its reader here. One of
		 * our descriptors is shared, so that a file it writes to keeps
		 * its offset (and what was written before). */
		if (o->stream_fd >= 0)
			o->fd = fcntl(o->stream_fd, F_DUPFD_CLOEXEC, 0);
		else
			o->fd = open(o->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (o->fd < 0) {
			rc = sp_error_set(err, SP_EIO, "'%s': %s", path, strerror(errno));
			goto fail;
		}
		return SP_OK;
	}
	if ((rc = start_tmp(o, &st, via_link, err)) != SP_OK)
		goto fail;
	return SP_OK;
fail:
	release(o);
	return rc;
}

enum sp_err sp_outpath_check(const char *path, int flags, enum sp_outpath_kind *kind,
			     struct sp_error *err)
{
	struct sp_outpath o;
	struct stat st;
	int via_link = 0;
	enum sp_err rc;

	reset(&o);
	if (kind)
		*kind = SP_OUTPATH_NEW;
	if (!path || !path[0])
		return sp_error_set(err, SP_EINVAL, "an empty output path");
	if (!(o.path = strdup(path)))
		return sp_error_set(err, SP_ENOMEM, "'%s': out of memory", path);
	rc = resolve(&o, path, flags, &st, &via_link, err);
	if (kind)
		*kind = o.kind;
	/* Opening a device or FIFO now could block or have effects; a file
	 * is probed where it will be written, then given up. */
	if (rc == SP_OK && (o.kind == SP_OUTPATH_NEW || o.kind == SP_OUTPATH_FILE) &&
	    (rc = start_tmp(&o, &st, via_link, err)) == SP_OK)
		sp_outpath_abort(&o);   /* removes the probe, ours */
	release(&o);             /* a failed probe created nothing to remove */
	return rc;
}

/* The last file a rename put in place, for a signal handler to name (on
 * any thread, while another notes the next): two buffers, the one to read
 * named by an atomic index (0: none), written before it is published. */
static char committed[2][PATH_MAX];
static _Atomic int committed_at;   /* 0 none, else 1 + the buffer */

void sp_outpath_note_committed(const char *target)
{
	size_t n = target ? strlen(target) : sizeof committed[0];
	int next = atomic_load(&committed_at) == 1 ? 1 : 0;
	if (n >= sizeof committed[0]) {
		atomic_store(&committed_at, 0);
		return;
	}
	memcpy(committed[next], target, n + 1);
	atomic_store(&committed_at, next + 1);
}

const char *sp_outpath_committed(void)
{
	int at = atomic_load(&committed_at);
	return at ? committed[at - 1] : NULL;
}

enum sp_err sp_outpath_commit(struct sp_outpath *o, struct sp_error *err)
{
	enum sp_err rc = SP_OK;
	if (!o->path)
		return sp_error_set(err, SP_EINVAL, "sp_outpath_commit: nothing open");
	if (!o->tmp) {
		if (o->fd >= 0 && close(o->fd) != 0 && errno != EINTR)
			rc = sp_error_set(err, SP_EIO, "'%s': %s", o->path, strerror(errno));
		o->fd = -1;
		release(o);
		return rc;
	}
	/* The rename replaces the target whole: a process that dies before it
	 * leaves the old file. No fsync: it would double the cost of writing
	 * a profile (the write budget, README.md "Performance", is h5py's
	 * write, which has none), and
	 * a rename over a file already makes ext4 flush the data first. */
	int e = 0;
	if (o->fd >= 0 && close(o->fd) != 0 && errno != EINTR)
		e = errno;
	o->fd = -1;
	if (!e && rename(o->tmp, o->target) != 0)
		e = errno;
	if (e) {
		rc = sp_error_set(err, e == ENOMEM ? SP_ENOMEM : SP_EIO, "'%s': %s", o->path, strerror(e));
		unlink(o->tmp);
	} else {
		sp_outpath_note_committed(o->target);
	}
	reg_remove(o->slot);
	release(o);
	return rc;
}

void sp_outpath_abort(struct sp_outpath *o)
{
	if (!o || !o->path)
		return;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	reg_remove(o->slot);
	release(o);
}

size_t sp_outpath_tmp_dirs(const char **dirs, size_t max)
{
	const char *cands[] = {getenv("TMPDIR"), getenv("TEMP"), getenv("TMP"), "/tmp", "/var/tmp", "/usr/tmp"};
	size_t n = 0;
	for (size_t i = 0; i < sizeof cands / sizeof cands[0] && n < max; i++) {
		struct stat st;
		if (!cands[i] || !*cands[i] || stat(cands[i], &st) != 0 || !S_ISDIR(st.st_mode) ||
		    access(cands[i], W_OK | X_OK) != 0)
			continue;
		int seen = 0;
		for (size_t k = 0; k < n && !seen; k++)
			seen = strcmp(dirs[k], cands[i]) == 0;
		if (!seen)
			dirs[n++] = cands[i];
	}
	return n;
}
