/* sp_meta.h - a profile's metadata (meta.c). Include <Python.h> first. */
#ifndef SP_META_H
#define SP_META_H

#include <stddef.h>

#include "sp_profile.h"
#include "sp_session.h"

/* The pairs (struct sp_kv), with the strings this holds itself. */
#define SP_NMETA 22
struct sp_meta {
	struct sp_kv kv[SP_NMETA];
	char *owned[SP_NMETA];
	size_t n;
};

/* Fills m (empty) for the settings s: host, platform, Python, the command
 * line (command_line, or sys.argv joined), MPI and OpenMP, the mode, the
 * lanes' names, recursive ("all", "true" or "false"), line timing, the
 * buffer limit, compression, time, directory, cores and user. 0, or -1
 * with an exception (m's pairs so far are m's: sp_meta_free). Some values
 * live in static buffers: one m at a time. */
int sp_meta_build(struct sp_meta *m, const struct sp_settings *s, const char *command_line, const char *recursive);

/* Frees what m holds; it is empty again. */
void sp_meta_free(struct sp_meta *m);

#endif
