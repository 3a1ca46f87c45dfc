/* test_children.c - merging the profiles of a run's child processes
 * (src/store/children.c): dir/proc-<PID>.h5 files appended as ranks of
 * their own, in pid order, after the parent's; other files ignored,
 * unreadable ones counted. */
#include "h5_fixtures.h"

#include "sp_children.h"

/* The parent's events: borrowed (live buffers of the recorder), never freed
 * by sp_profile_free. */
static int64_t parent_starts[] = {100, 200, 300}, parent_ends[] = {900, 250, 380};

/* A parent profile of ranks numbered rank_a (and rank_b when >= 0), whose
 * regions borrow their events. */
static struct sp_profile *make_parent(int rank_a, int rank_b)
{
	static const struct sp_tree_node tree[] = {{-1, 0, 1, 800}, {0, 1, 2, 130}};
	struct sp_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->nranks = rank_b >= 0 ? 2 : 1;
	p->ranks = calloc(p->nranks, sizeof *p->ranks);
	p->meta = calloc(1, sizeof *p->meta);
	p->meta[p->nmeta++] = (struct sp_kv){strdup("mpi_size"), strdup("1"), SP_KV_FIXED};
	for (size_t r = 0; r < p->nranks; r++) {
		struct sp_rank *rk = &p->ranks[r];
		rk->rank = r ? rank_b : rank_a;
		rk->pid = 100;
		rk->run_start_ns = 50;
		rk->run_end_ns = 1000;
		rk->regions = calloc(2, sizeof *rk->regions);
		rk->nregions = 2;
		rk->regions[0].name = strdup("main");
		rk->regions[0].starts = parent_starts;
		rk->regions[0].ends = parent_ends;
		sp_stats_compute(&rk->regions[0].stats, parent_starts, parent_ends, 1);
		rk->regions[1].name = strdup("step");
		rk->regions[1].starts = parent_starts + 1;
		rk->regions[1].ends = parent_ends + 1;
		sp_stats_compute(&rk->regions[1].stats, parent_starts + 1, parent_ends + 1, 2);
		set_tree(rk, tree, 2);
	}
	return p;
}

/* A child's profile as the child writes it: one rank 0 with its pid and
 * parent, a hostname, calls lost, a tree, a line table and a LIKWID table;
 * times offset by t. */
static void write_child(const char *name, int64_t pid, int64_t parent, int64_t t)
{
	const int64_t main_ev[] = {t + 10, t + 500}, work[] = {t + 20, t + 60, t + 100, t + 400};
	static const struct sp_tree_node tree[] = {{-1, 0, 1, 490}, {0, 1, 2, 340}};
	static const char *const src[] = {"def work():", "    pass"};
	static const int64_t hits[] = {0, 2}, ns[] = {0, 340};
	struct sp_profile *c = calloc(1, sizeof *c);
	struct sp_error err = {0};
	assert_non_null(c);
	c->nranks = 1;
	c->ranks = calloc(1, sizeof *c->ranks);
	c->meta = calloc(1, sizeof *c->meta);
	c->meta[c->nmeta++] = (struct sp_kv){strdup("script"), strdup("child.py"), SP_KV_FIXED};
	struct sp_rank *rk = &c->ranks[0];
	rk->pid = pid;
	rk->parent_pid = parent;
	rk->run_start_ns = t;
	rk->run_end_ns = t + 600;
	rk->hostname = strdup("node-c");
	rk->dropped = 3;
	rk->regions = calloc(2, sizeof *rk->regions);
	add_region(rk, "child_main", main_ev, 1);
	add_region(rk, "work", work, 2);
	rk->regions[1].dropped = 3;
	set_tree(rk, tree, 2);
	add_lines(rk, "work", "work", "child.py", 1, 2, hits, ns, src);
	rk->likwid = calloc(1, sizeof *rk->likwid);
	rk->nlikwid = 1;
	struct sp_likwid_region *l = &rk->likwid[0];
	l->region = strdup("work");
	l->nthreads = l->nevents = 1;
	l->events = malloc(sizeof(double));
	l->events[0] = 2.5;
	l->count = malloc(sizeof(int64_t));
	l->count[0] = 2;
	l->time = malloc(sizeof(double));
	l->time[0] = 0.25;
	assert_ok(sp_h5_write(c, tpath(name), &err), &err);
	sp_profile_free(c);
}

/* What write_child wrote, as rank number of p at index i. */
static void assert_child(const struct sp_profile *p, size_t i, int rank, int64_t pid, int64_t parent, int64_t t)
{
	const struct sp_rank *rk = &p->ranks[i];
	assert_int_equal(rk->rank, rank);
	assert_true(rk->pid == pid);
	assert_true(rk->parent_pid == parent);
	assert_true(rk->run_start_ns == t && rk->run_end_ns == t + 600);
	assert_string_equal(rk->hostname, "node-c");
	assert_true(rk->dropped == 3);
	assert_int_equal(rk->nregions, 2);
	const struct sp_region_data *m = find_region(rk, "child_main"), *w = find_region(rk, "work");
	assert_non_null(m);
	assert_non_null(w);
	assert_true(m->owns_events && w->owns_events);
	assert_int_equal(w->stats.num_calls, 2);
	assert_true(w->dropped == 3);
	assert_true(m->starts[0] == t + 10 && m->ends[0] == t + 500);
	assert_true(w->starts[0] == t + 20 && w->ends[0] == t + 60);
	assert_true(w->starts[1] == t + 100 && w->ends[1] == t + 400);
	assert_int_equal(rk->ntree, 2);
	assert_true(rk->tree[1].calls == 2 && rk->tree[1].total_ns == 340);
	assert_int_equal(rk->nlines, 1);
	assert_string_equal(rk->lines[0].function, "work");
	assert_true(rk->lines[0].time_ns[1] == 340);
	assert_int_equal(rk->nlikwid, 1);
	assert_string_equal(rk->likwid[0].region, "work");
	assert_true(rk->likwid[0].count[0] == 2);
}

/* The parent's own rank at index i, as make_parent built it. */
static void assert_parent(const struct sp_profile *p, size_t i, int rank)
{
	const struct sp_rank *rk = &p->ranks[i];
	assert_int_equal(rk->rank, rank);
	assert_true(rk->pid == 100 && rk->parent_pid == 0);
	assert_int_equal(rk->nregions, 2);
	const struct sp_region_data *s = find_region(rk, "step");
	assert_non_null(s);
	assert_int_equal(s->stats.num_calls, 2);
	assert_true(s->starts[1] == 300 && s->ends[1] == 380);
}

/* Two children (a grandchild among them) merge after the parent's rank in
 * pid order, survive a write and a read, and the parent's borrowed events
 * stay the parent's. */
static void test_merge_two(void **state)
{
	(void)state;
	struct sp_profile *p = make_parent(0, -1), *q = NULL;
	struct sp_children_found found = {.merged = 9, .unreadable = 9, .recovered = 9};
	struct sp_error err = {0};

	write_child("proc-205.h5", 205, 100, 2000);
	write_child("proc-31.h5", 31, 205, 5000);      /* a grandchild: its parent is 205 */
	write_bytes(tpath("notes.txt"), "not a profile", 13);
	assert_ok(sp_children_merge(p, dir, &found, &err), &err);
	assert_int_equal(found.merged, 2);
	assert_int_equal(found.processes, 2);
	assert_int_equal(found.unreadable, 0);
	assert_int_equal(p->nranks, 3);
	assert_parent(p, 0, 0);
	assert_false(p->ranks[0].regions[0].owns_events);
	assert_child(p, 1, 1, 31, 205, 5000);          /* ascending pid: 31 before 205 */
	assert_child(p, 2, 2, 205, 100, 2000);
	assert_int_equal(p->nmeta, 1);                 /* the children's metadata is ignored */
	assert_string_equal(p->meta[0].key, "mpi_size");

	const char *out = tpath("merged.h5");
	assert_ok(sp_h5_write(p, out, &err), &err);
	sp_profile_free(p);                            /* frees only what it owns */
	assert_true(parent_starts[1] == 200);
	assert_ok(sp_h5_read(out, SP_READ_EVENTS, &q, &err), &err);
	assert_int_equal(q->nranks, 3);
	assert_parent(q, 0, 0);
	assert_child(q, 1, 1, 31, 205, 5000);
	assert_child(q, 2, 2, 205, 100, 2000);
	sp_profile_free(q);

	/* The parent_pid attribute exists only where it is not 0. */
	hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	assert_int_equal(H5Aexists_by_name(f, "rank0", "parent_pid", H5P_DEFAULT), 0);
	assert_int_equal(H5Aexists_by_name(f, "rank1", "parent_pid", H5P_DEFAULT), 1);
	H5Fclose(f);
	remove(out);
	remove(tpath("proc-205.h5"));
	remove(tpath("proc-31.h5"));
	remove(tpath("notes.txt"));
}

/* A garbage proc-9.h5 is counted, not merged; a temporary file of a write
 * in progress is ignored; ranks are numbered after the highest one; a
 * program a child ran after os.exec* is a child after it. */
static void test_unreadable_and_ignored(void **state)
{
	(void)state;
	struct sp_profile *p = make_parent(0, 3);
	struct sp_children_found found = {0};
	struct sp_error err = {0};

	write_bytes(tpath("proc-9.h5"), "garbage, not HDF5", 17);
	write_child("proc-12.h5.tmp.34", 12, 100, 7000);   /* a child still writing */
	write_child("proc-.h5", 1, 100, 7000);
	write_child("proc-1x.h5", 1, 100, 7000);
	write_child("proc-40-1.h5", 1, 100, 7000);   /* a program after os.exec* is -2, -3, ... */
	write_child("proc-40-.h5", 1, 100, 7000);
	write_child("proc-40-2.h5", 40, 100, 5000);  /* what pid 40 ran after its exec */
	write_child("proc-40.h5", 40, 100, 3000);
	assert_ok(sp_children_merge(p, dir, &found, &err), &err);
	assert_int_equal(found.merged, 2);
	assert_int_equal(found.processes, 1);   /* pid 40's two programs: one process */
	assert_int_equal(found.unreadable, 1);
	assert_int_equal(p->nranks, 4);
	assert_parent(p, 0, 0);
	assert_parent(p, 1, 3);
	assert_child(p, 2, 4, 40, 100, 3000);
	assert_child(p, 3, 5, 40, 100, 5000);
	sp_profile_free(p);

	char **files = NULL;
	size_t n = 0;
	assert_ok(sp_children_files(dir, &files, &n, &err), &err);
	assert_int_equal(n, 3);   /* proc-9.h5 (unreadable: the merge says so), proc-40.h5, proc-40-2.h5 */
	assert_string_equal(strrchr(files[1], '/'), "/proc-40.h5");
	assert_string_equal(strrchr(files[2], '/'), "/proc-40-2.h5");
	sp_children_files_free(files, n);

	/* found may be NULL. */
	p = make_parent(0, -1);
	assert_ok(sp_children_merge(p, dir, NULL, &err), &err);
	assert_int_equal(p->nranks, 3);
	sp_profile_free(p);
	remove(tpath("proc-9.h5"));
	remove(tpath("proc-12.h5.tmp.34"));
	remove(tpath("proc-.h5"));
	remove(tpath("proc-1x.h5"));
	remove(tpath("proc-40-1.h5"));
	remove(tpath("proc-40-.h5"));
	remove(tpath("proc-40-2.h5"));
	remove(tpath("proc-40.h5"));
}

/* A child's finished file is taken before its partial one (which a
 * finished stream no longer leaves); a partial file is taken when the
 * finished one is not there or cannot be read. (What a partial file holds
 * and the incomplete_ranks it adds: test_subprocesses.py, from a child
 * really killed while streaming.) */
static void test_finished_before_partial(void **state)
{
	(void)state;
	struct sp_profile *p = make_parent(0, -1);
	struct sp_children_found found = {0};
	struct sp_error err = {0};

	write_child("proc-50.h5", 50, 100, 2000);
	write_child("proc-50.h5.partial", 50, 100, 9000);
	write_bytes(tpath("proc-60.h5"), "garbage, not HDF5", 17);
	write_child("proc-60.h5.partial", 60, 100, 3000);
	write_child("proc-70.h5.partial", 70, 100, 4000);
	write_child("proc-80.h5.partia", 80, 100, 4000);   /* not a name of a child's */
	assert_ok(sp_children_merge(p, dir, &found, &err), &err);
	assert_int_equal(found.merged, 3);
	assert_int_equal(found.unreadable, 1);
	assert_int_equal(found.recovered, 0);           /* each file here is a finished profile */
	assert_int_equal(p->nranks, 4);
	assert_parent(p, 0, 0);
	assert_child(p, 1, 1, 50, 100, 2000);
	assert_child(p, 2, 2, 60, 100, 3000);
	assert_child(p, 3, 3, 70, 100, 4000);
	assert_null(sp_profile_meta(p, "incomplete_ranks"));
	sp_profile_free(p);
	remove(tpath("proc-50.h5"));
	remove(tpath("proc-50.h5.partial"));
	remove(tpath("proc-60.h5"));
	remove(tpath("proc-60.h5.partial"));
	remove(tpath("proc-70.h5.partial"));
	remove(tpath("proc-80.h5.partia"));
}

/* A missing or empty folder merges nothing and is no error. */
static void test_none(void **state)
{
	(void)state;
	struct sp_profile *p = make_parent(0, -1);
	struct sp_children_found found = {.merged = 5, .unreadable = 5, .recovered = 5};
	struct sp_error err = {0};

	assert_ok(sp_children_merge(p, tpath("no-such-folder"), &found, &err), &err);
	assert_int_equal(found.merged, 0);
	assert_int_equal(found.unreadable, 0);
	assert_int_equal(p->nranks, 1);

	const char *empty = tpath("empty");
	assert_int_equal(mkdir(empty, 0700), 0);
	found = (struct sp_children_found){.merged = 5, .unreadable = 5, .recovered = 5};
	assert_ok(sp_children_merge(p, empty, &found, &err), &err);
	assert_int_equal(found.merged, 0);
	assert_int_equal(found.unreadable, 0);
	assert_int_equal(p->nranks, 1);
	assert_parent(p, 0, 0);
	rmdir(empty);
	sp_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_two),
		cmocka_unit_test(test_unreadable_and_ignored),
		cmocka_unit_test(test_finished_before_partial),
		cmocka_unit_test(test_none),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return cmocka_run_group_tests(tests, setup, teardown);
}
