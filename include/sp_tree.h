/* sp_tree.h - a rank's call tree, built by the report layer from the
 * rank's events by containment (src/report/nest.c's rule) when the file
 * holds none: the store returns what the file holds, and every consumer of
 * the tree (the commands, the Python read API) reads through
 * sp_report_read, which builds the missing trees once. */
#ifndef SP_TREE_H
#define SP_TREE_H

#include "sp_profile.h"

/* Builds rank->tree from the rank's event columns by containment (all
 * regions' events must be loaded). Replaces any previous tree. Fails with
 * SP_EINVAL when a region with calls has no event columns loaded, SP_ENOMEM
 * on out of memory or size overflow; on failure the rank is left as it was. */
enum sp_err sp_tree_build(struct sp_rank *rank, struct sp_error *err);

/* sp_tree_build for every rank of p without a tree (tree NULL). SP_OK, or
 * the first failure (the ranks built before it keep their trees). */
enum sp_err sp_profile_trees(struct sp_profile *p, struct sp_error *err);

/* sp_h5_read (flags as there), then sp_profile_trees: on success every rank
 * has stats and a tree. A tree that cannot be built fails the read as the
 * reader's own errors do ("cannot read 'PATH': ...", *out NULL). */
enum sp_err sp_report_read(const char *path, int flags, struct sp_profile **out, struct sp_error *err);

#endif
