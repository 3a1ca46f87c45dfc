/* sp_outpath.h - where and how an output file is written: the one owner of
 * the temporary file and the rename (the HDF5 profile, exports, run's early
 * check). Output paths are never clobbered:
 *
 *   - a symlink is followed to its final target (a dangling one too: the
 *     target it names is created); the link itself stays;
 *   - a regular file, or a new one, is written to TARGET.tmp.PID beside the
 *     real target and renamed over it: readers see the old file or
 *     the whole new one. A new file gets 0666 & ~umask; a replaced one keeps
 *     its permission bits (and, as root, its owner). With
 *     SP_OUTPATH_PROFILE_ONLY (the profile) a non-empty file that is not a
 *     scope-profiler profile (a script, notes, someone's HDF5 data) is
 *     refused instead, unless sp_outpath_allow named it;
 *   - a character device or a FIFO (/dev/null, a terminal) is written in
 *     place, opened without O_CREAT or O_TRUNC, when the caller asks for it
 *     (SP_OUTPATH_IN_PLACE: exports); otherwise it is refused (the HDF5
 *     profile); a block device (a disk), a socket and a directory are
 *     always refused;
 *   - an open descriptor named through /proc (/dev/stdout, /dev/fd/N,
 *     /proc/self/fd/N), whatever it leads to (a pipe, a terminal, a file
 *     the shell redirected to), is written in place through a duplicate of
 *     that descriptor (its offset and O_APPEND shared: a redirected file
 *     keeps what came before), with SP_OUTPATH_IN_PLACE; else refused;
 *   - a TARGET.tmp.PID left by a dead process (kill(pid, 0) fails with ESRCH)
 *     on a local file system is removed by the next write to that target;
 *     a live process's, or one on a network file system (where the pid may
 *     belong to another host), is left alone.
 *
 * Every message is "'PATH': reason" (PATH as the caller gave it, its real
 * target added when a symlink led elsewhere); callers prefix what they were
 * writing: "cannot write the profile to %s". */
#ifndef SP_OUTPATH_H
#define SP_OUTPATH_H

#include "sp_error.h"

/* What an output path leads to, symlinks followed. */
enum sp_outpath_kind {
	SP_OUTPATH_NEW,        /* nothing there yet: created */
	SP_OUTPATH_FILE,       /* a regular file: replaced by the rename */
	SP_OUTPATH_DIR,        /* a directory: refused */
	SP_OUTPATH_NULL,       /* the null device (/dev/null): in place or refused */
	SP_OUTPATH_DEVICE,     /* another character or block device (a terminal) */
	SP_OUTPATH_FIFO,       /* a FIFO or a pipe (/dev/stdout on a pipe) */
	SP_OUTPATH_SOCKET,     /* a socket: refused */
	SP_OUTPATH_STREAM,     /* an open descriptor: /dev/stdout, /dev/fd/N, /proc/PID/fd/N */
};

enum sp_outpath_flags {
	SP_OUTPATH_IN_PLACE = 1,   /* write devices and FIFOs in place (else refuse them) */
	SP_OUTPATH_LINK_REPLACED = 4, /* a symlink at the path is replaced by the file, not
				       * followed (plot's fixed names in its folder: a link
				       * planted there never leads the write elsewhere) */
	SP_OUTPATH_PROFILE_ONLY = 2,  /* replace an existing non-empty regular file only when
				       * it is a scope-profiler profile (or sp_outpath_allow
				       * named it); refuse any other (a script, a text file,
				       * another HDF5 file) with SP_EEXIST */
};

/* An output being written. Fields are read-only for callers. */
struct sp_outpath {
	char *path;                /* as given, for messages */
	char *target;              /* symlinks followed: what is written or replaced */
	char *tmp;                 /* TARGET.tmp.PID, or NULL when written in place */
	int fd;                    /* open for writing; -1 once closed */
	enum sp_outpath_kind kind;
	int slot;                  /* in the cleanup registry, or -1 */
	int stream_fd;             /* SP_OUTPATH_STREAM: our descriptor it names, or -1 */
};

/* Checks, before hours of work, that path can be written with these flags:
 * follows symlinks, refuses what sp_outpath_open would refuse, removes a
 * dead process's TARGET.tmp.PID and creates and removes TARGET.tmp.PID once
 * (a missing folder or a permission problem shows now). *kind (when not
 * NULL) is set even on failure, when the path could be examined. Returns
 * SP_OK, SP_EINVAL (a directory, a socket, a device or FIFO without
 * SP_OUTPATH_IN_PLACE, a symlink loop), SP_EEXIST (SP_OUTPATH_PROFILE_ONLY:
 * a file that is not a profile), SP_ENOMEM or SP_EIO with err set. */
enum sp_err sp_outpath_check(const char *path, int flags, enum sp_outpath_kind *kind,
			     struct sp_error *err);

/* path made absolute against the working folder, into buf (len bytes): an
 * absolute path is copied. Returns SP_OK, or SP_EINVAL with err set: the
 * working folder's path is longer than PATH_MAX (getcwd's ERANGE: "'PATH'
 * is relative and the working folder's path is too long (longer than
 * PATH_MAX, N bytes)"), the result does not fit len; SP_EIO for another
 * getcwd failure (the folder was removed). */
enum sp_err sp_outpath_absolute(const char *path, char *buf, size_t len, struct sp_error *err);

/* Whether path and other name the same existing file (device and inode,
 * symlinks followed): 1 if so, 0 otherwise (either missing or unreadable).
 * For an output that would overwrite its own input (export's profile,
 * run's script). */
int sp_outpath_same_file(const char *path, const char *other);

/* The user's leave (run --force, recover --force) to replace what path
 * leads to with a profile, whatever it holds: SP_OUTPATH_PROFILE_ONLY and
 * sp_outpath_replaceable then let it be replaced (a later call names
 * another path; NULL forgets it), unless it is then the file never (when
 * not NULL: the script being run, which a symlink made meanwhile could
 * lead to). Returns SP_OK, or SP_ENOMEM / SP_EINVAL (sp_outpath_absolute's)
 * with err set. */
enum sp_err sp_outpath_allow(const char *path, const char *never, struct sp_error *err);

/* Whether a profile may replace what path leads to now (the end of a run
 * checks again what the start checked: a file may have appeared since):
 * SP_OK for nothing there, an empty file, a profile, or the path
 * sp_outpath_allow named; SP_EEXIST (err: "'PATH': it exists and is not a
 * scope-profiler profile") for another regular file (one it cannot read
 * too); SP_EIO when its real path cannot be found. */
enum sp_err sp_outpath_replaceable(const char *path, struct sp_error *err);

/* The folders for temporary files, in the order Python's tempfile tries
 * them ($TMPDIR, $TEMP, $TMP, /tmp, /var/tmp, /usr/tmp), each an existing
 * folder this process may write into: up to max of them into dirs
 * (pointers into the environment or literals). Returns how many. */
size_t sp_outpath_tmp_dirs(const char **dirs, size_t max);

/* Opens path for writing into *o: a device or FIFO in place (flags allowing),
 * else a new TARGET.tmp.PID (created with O_EXCL, registered for
 * sp_outpath_cleanup_tmp). A stale TARGET.tmp.PID of a dead process is
 * removed first. Returns the codes of sp_outpath_check; on failure nothing
 * is left open or created and *o needs no sp_outpath_abort. o->fd may be
 * closed by the caller (set it to -1), e.g. when a library reopens o->tmp
 * by name. */
enum sp_err sp_outpath_open(struct sp_outpath *o, const char *path, int flags, struct sp_error *err);

/* Finishes a successful write: closes the temporary file and
 * renames it over the target, or closes the device. On failure (SP_EIO,
 * e.g. ENOSPC reported by close) the temporary file is removed and the
 * target is untouched. Frees o's strings whatever the outcome; o is then
 * like a closed one (sp_outpath_abort does nothing). */
enum sp_err sp_outpath_commit(struct sp_outpath *o, struct sp_error *err);

/* Gives up: closes, removes the temporary file, frees o's strings. Safe on
 * a zeroed, a failed-to-open or an already finished *o. */
void sp_outpath_abort(struct sp_outpath *o);

/* The last file put in place by a rename (sp_outpath_commit, a stream's
 * finish, a run's own file moved to OUT), noted by sp_outpath_note_committed:
 * a signal handler names it (async-signal-safe); NULL before any, or
 * since sp_outpath_note_committed(NULL) (the run's end begins). */
void sp_outpath_note_committed(const char *target);
const char *sp_outpath_committed(void);

/* Removes every temporary file this process is writing now. Async-signal
 * safe (unlink only): for a fatal signal's handler, before it re-raises.
 * The writers then fail when they commit; nothing else is touched. Also
 * run at exit. */
void sp_outpath_cleanup_tmp(void);

#endif
