/* sp_error.h - the one error type of the scope-profiler library. */
#ifndef SP_ERROR_H
#define SP_ERROR_H

#include <stddef.h>

enum sp_err {
	SP_OK = 0,
	SP_ENOMEM,     /* out of memory, or a size computation overflowed */
	SP_EIO,        /* the operating system or HDF5 failed to read or write */
	SP_ENOENT,     /* the file does not exist */
	SP_ENOTHDF5,   /* the file is not an HDF5 file (empty, text, truncated) */
	SP_ENOTPROF,   /* an HDF5 file, but not a scope-profiler profile */
	SP_ECORRUPT,   /* a profile whose contents contradict each other */
	SP_EINVAL,     /* an invalid argument */
	SP_EEXIST,     /* an output path holds a file that must not be replaced */
};

/* A code plus one line of detail, filled by the function that failed. */
struct sp_error {
	enum sp_err code;
	char msg[512];
};

/* Static description of a code; never NULL. */
const char *sp_strerror(enum sp_err code);

/* Sets err (when not NULL) to code and a printf-style detail; returns code. */
enum sp_err sp_error_set(struct sp_error *err, enum sp_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The one printer of the tool's error lines, for every command and the run
 * session: "scope-profiler: <cmd>: <message>\n" on stderr, in one write
 * (under mpirun the ranks' stderr meet in one stream), after flushing stdout. */
void sp_cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line of the first n bytes of s, in place: a control character a path
 * or a name brought (a newline in a file name) is shown as '?', as the
 * readers show it. UTF-8 stays whole (its bytes are never control ones). */
void sp_one_line(char *s, size_t n);

/* The exit status of a usage error, in every command. */
#define SP_EXIT_USAGE 2

#endif
