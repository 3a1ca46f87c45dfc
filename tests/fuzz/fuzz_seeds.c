/* fuzz_seeds.c - writes the seed corpus of tests/fuzz/fuzz_read.c into the folder
 * given as argv[1]: profiles written by the library's own writer (one rank
 * and two, nested calls, a call tree, compressed columns with thread lanes,
 * a line table, an aggregate region, metadata), each in format version 2
 * and again in version 1 (v1-*.h5), the plain hand-written layout, a
 * streamed profile of format version 3 (v3-*.h5: finished, and partial,
 * left open for SWMR writing as a killed run leaves it), and foreign files
 * (empty, text, an HDF5 file that is no profile). Small files only: the
 * campaign's mutations do the rest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_h5.h"
#include "sp_tree.h"

static const char *dir;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_seeds: %s\n", what);
	exit(1);
}

#define V3_CHECK(cond) do { if (!(cond)) die("cannot write a version 3 file: " #cond); } while (0)
#include "../store/h5_v3.h"

static char *seed_path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	return buf;
}

/* Adds a region of n calls, call i at t0 + i * step lasting len (lanes
 * alternating 0 and 1 when asked). */
static void add(struct sp_rank *rk, const char *name, size_t n, int64_t t0, int64_t step, int64_t len,
		int lanes)
{
	struct sp_region_data *rd = &rk->regions[rk->nregions++];
	if (!(rd->name = strdup(name)) || !(rd->starts = malloc(n * sizeof *rd->starts)) ||
	    !(rd->ends = malloc(n * sizeof *rd->ends)) || (lanes && !(rd->lanes = malloc(n * sizeof *rd->lanes))))
		die("out of memory");
	for (size_t i = 0; i < n; i++) {
		rd->starts[i] = t0 + (int64_t)i * step;
		rd->ends[i] = rd->starts[i] + len;
		if (lanes)
			rd->lanes[i] = (int32_t)(i % 2);
	}
	rd->owns_events = 1;
	sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
}

static struct sp_profile *new_profile(size_t nranks)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	if (!p || !(p->ranks = calloc(nranks, sizeof *p->ranks)) || !(p->meta = calloc(2, sizeof *p->meta)))
		die("out of memory");
	p->nranks = nranks;
	p->meta[p->nmeta++] = (struct sp_kv){strdup("hostname"), strdup("node-1"), SP_KV_FIXED};
	p->meta[p->nmeta++] = (struct sp_kv){strdup("omp_num_threads"), strdup("2"), SP_KV_FIXED};
	for (size_t r = 0; r < nranks; r++) {
		struct sp_rank *rk = &p->ranks[r];
		rk->rank = (int)r;
		rk->run_start_ns = 100;
		rk->run_end_ns = 1000000;
		rk->pid = 4000 + (int64_t)r;
		rk->hostname = strdup(r < 2 ? "node-1" : "node-2");
		if (!(rk->regions = calloc(4, sizeof *rk->regions)))
			die("out of memory");
	}
	return p;
}

static void build_trees(struct sp_profile *p)
{
	struct sp_error err = {0};
	for (size_t r = 0; r < p->nranks; r++)
		if (!p->ranks[r].tree && sp_tree_build(&p->ranks[r], &err) != SP_OK)
			die(err.msg);
}

/* Writes p as name (format version 2) and v1-name (version 1); frees p. */
static void write_profile(struct sp_profile *p, const char *name)
{
	struct sp_error err = {0};
	char v1[256];
	build_trees(p);
	snprintf(v1, sizeof v1, "v1-%s", name);
	p->format_version = 2;
	if (sp_h5_write(p, seed_path(name), &err) != SP_OK)
		die(err.msg);
	p->format_version = 1;
	if (sp_h5_write(p, seed_path(v1), &err) != SP_OK)
		die(err.msg);
	sp_profile_free(p);
}

static void add_line_table(struct sp_rank *rk)
{
	static const char *const src[] = {"def solve(x):", "    y = x * 2", "    return y"};
	if (!(rk->lines = calloc(1, sizeof *rk->lines)))
		die("out of memory");
	rk->nlines = 1;
	struct sp_line_table *t = &rk->lines[0];
	t->function = strdup("solve");
	t->region = strdup("solve");
	t->filename = strdup("/src/s.py");
	t->first_line = 10;
	t->n = 3;
	t->hits = calloc(3, sizeof *t->hits);
	t->time_ns = calloc(3, sizeof *t->time_ns);
	t->source = calloc(3, sizeof *t->source);
	if (!t->hits || !t->time_ns || !t->source)
		die("out of memory");
	for (int i = 0; i < 3; i++) {
		t->hits[i] = i;
		t->time_ns[i] = 100 * i;
		t->source[i] = strdup(src[i]);
	}
}

/* LIKWID counters (run --likwid) of region "solve": two threads, three
 * events. */
static void add_likwid(struct sp_rank *rk)
{
	if (!(rk->likwid = calloc(1, sizeof *rk->likwid)))
		die("out of memory");
	rk->nlikwid = 1;
	struct sp_likwid_region *t = &rk->likwid[0];
	t->region = strdup("solve");
	t->nthreads = 2;
	t->nevents = 3;
	t->events = calloc(6, sizeof *t->events);
	t->count = calloc(2, sizeof *t->count);
	t->time = calloc(2, sizeof *t->time);
	if (!t->region || !t->events || !t->count || !t->time)
		die("out of memory");
	for (int i = 0; i < 6; i++)
		t->events[i] = 1000.5 * (i + 1);
	t->count[0] = 3;
	t->count[1] = 1;
	t->time[0] = 0.25;
	t->time[1] = 0.125;
	/* LIKWID's derived metrics: two rows of two, one not a number. */
	if (!(t->metrics = malloc(4 * sizeof *t->metrics)))
		die("out of memory");
	t->nmrows = 2;
	t->nmetrics = 2;
	t->metrics[0] = 0.25;
	t->metrics[1] = 12.5;
	t->metrics[2] = NAN;
	t->metrics[3] = 3e9;
}

/* An HDF5 file written with the C API directly: the plain layout
 * (rank0/regions/NAME/start_times and end_times, nothing else) when plain
 * is set, else a file that is no profile (a dataset and an attribute). */
static void write_raw(const char *name, int plain)
{
	hid_t f = H5Fcreate(seed_path(name), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hsize_t n = 4;
	int64_t starts[4] = {10, 20, 30, 40}, ends[4] = {15, 28, 31, 49};
	hid_t sp = H5Screate_simple(1, &n, NULL);
	if (f < 0 || sp < 0)
		die("cannot create an HDF5 file");
	if (plain) {
		hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
		if (lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0)
			die("cannot set up HDF5");
		hid_t g = H5Gcreate2(f, "rank0/regions/step", lcpl, H5P_DEFAULT, H5P_DEFAULT);
		hid_t a = H5Dcreate2(g, "start_times", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		hid_t b = H5Dcreate2(g, "end_times", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		if (a < 0 || b < 0 || H5Dwrite(a, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, starts) < 0 ||
		    H5Dwrite(b, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ends) < 0)
			die("cannot write the plain layout");
		H5Dclose(a);
		H5Dclose(b);
		H5Pclose(lcpl);
		H5Gclose(g);
	} else {
		hid_t d = H5Dcreate2(f, "data", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		hid_t s = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate2(f, "format", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT);
		int32_t v = 7;
		if (d < 0 || a < 0 || H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, starts) < 0 ||
		    H5Awrite(a, H5T_NATIVE_INT32, &v) < 0)
			die("cannot write the foreign file");
		H5Aclose(a);
		H5Sclose(s);
		H5Dclose(d);
	}
	H5Sclose(sp);
	if (H5Fclose(f) < 0)
		die("cannot close an HDF5 file");
}

/* Format version 3 (tests/store/h5_v3.h): finished, and partial, written by
 * a child that exits without closing it (its superblock still says it is
 * open for SWMR writing, as after a kill). */
static void write_v3(void)
{
	struct v3_file f = v3_good(1);
	v3_write(seed_path("v3-finished.h5"), &f, 0);
	pid_t pid = fork();
	int status = 0;
	if (pid < 0)
		die("cannot fork");
	if (pid == 0) {
		f = v3_good(0);
		v3_write(seed_path("v3-run.h5.partial"), &f, 1);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("cannot write the partial version 3 file");
}

static void write_text(const char *name, const char *text)
{
	FILE *f = fopen(seed_path(name), "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		die("cannot write a text seed");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		die("usage: fuzz_seeds DIR");
	dir = argv[1];

	/* One rank: a timestep loop with nested solve calls. */
	struct sp_profile *p = new_profile(1);
	add(&p->ranks[0], "timestep", 5, 1000, 2000, 1800, 0);
	add(&p->ranks[0], "solve", 5, 1100, 2000, 900, 0);
	add(&p->ranks[0], "io/write", 2, 9000, 500, 100, 0);
	write_profile(p, "one-rank.h5");

	/* Compressed (chunked, shuffle + deflate) columns with thread lanes. */
	p = new_profile(1);
	p->compression = 6;
	add(&p->ranks[0], "timestep", 100, 1000, 2000, 1800, 1);
	add(&p->ranks[0], "solve", 100, 1100, 2000, 900, 1);
	write_profile(p, "compressed.h5");

	/* Two ranks, a line table on rank 0, an aggregate region on rank 1. */
	p = new_profile(2);
	for (int r = 0; r < 2; r++) {
		add(&p->ranks[r], "timestep", 4, 1000, 2000, 1800 - 100 * r, 0);
		add(&p->ranks[r], "solve", 4, 1100, 2000, 900, 0);
	}
	add_line_table(&p->ranks[0]);
	add_likwid(&p->ranks[0]);
	build_trees(p);        /* an aggregate region has no calls to nest */
	struct sp_region_data *agg = &p->ranks[1].regions[p->ranks[1].nregions++];
	agg->name = strdup("agg");
	agg->aggregate = 1;
	agg->self_ns = 300;
	agg->stats = (struct sp_stats){.num_calls = 3, .total_ns = 600, .min_ns = 100, .max_ns = 300,
				       .mean_ns = 200, .std_ns = 81.6, .first_start_ns = 20000,
				       .last_end_ns = 21000};
	write_profile(p, "two-ranks-lines.h5");

	/* Per-call values of both kinds (run --memory, --mpi-calls) and peaks. */
	p = new_profile(1);
	add(&p->ranks[0], "solve", 6, 1000, 2000, 1800, 0);
	add(&p->ranks[0], "MPI_Allreduce", 6, 1100, 2000, 900, 0);
	add(&p->ranks[0], "io", 2, 20000, 500, 100, 0);
	for (int k = 0; k < 2; k++) {
		struct sp_region_data *rd = &p->ranks[0].regions[k];
		if (!(rd->values = malloc(6 * sizeof *rd->values)))
			die("out of memory");
		for (int i = 0; i < 6; i++)
			rd->values[i] = 1000 * (k + 1) * i;
		rd->value_kind = k ? SP_VALUES_BYTES : SP_VALUES_ALLOC_BYTES;
		rd->values_total = 15000 * (k + 1);
	}
	p->ranks[0].regions[0].peak_bytes = 1 << 20;
	p->ranks[0].regions[2].peak_bytes = 4096;
	write_profile(p, "values.h5");

	write_raw("plain-layout.h5", 1);
	write_raw("foreign.h5", 0);
	write_v3();
	write_text("empty", "");
	write_text("text", "start_times,end_times\n1,2\n");
	write_text("hdf5-signature-only", "\x89HDF\r\n\x1a\n");
	return 0;
}
