/* sp_h5.h - the HDF5 file format, version 1 (see README "File format"). */
#ifndef SP_H5_H
#define SP_H5_H

#include "sp_profile.h"

/* Writes the profile to path atomically: to a temporary file in the same
 * folder, then rename(2). Regions with num_calls == 0 are skipped. Every
 * region's events must be loaded. On failure nothing is left at path (an
 * existing file there is untouched) and err says why. */
enum sp_err sp_h5_write(const struct sp_profile *p, const char *path, struct sp_error *err);

enum sp_read_flags {
	SP_READ_SUMMARY = 0,           /* stats and trees; events only if needed */
	SP_READ_EVENTS = 1,            /* also load every event column */
};

/* Reads a profile (format 1, or the plain rank{N}/regions/{name}/start_times
 * and end_times layout). On success *out owns everything; after a summary
 * read, every rank has stats and a tree. */
enum sp_err sp_h5_read(const char *path, int flags, struct sp_profile **out, struct sp_error *err);

/* Escapes a region name into an HDF5 link name ('%' -> %25, '/' -> %2F, a
 * name "." -> %2E); returns a malloc'd string or NULL on out of memory. */
char *sp_h5_escape(const char *name);
/* The inverse; returns a malloc'd string or NULL. */
char *sp_h5_unescape(const char *link);

#endif
