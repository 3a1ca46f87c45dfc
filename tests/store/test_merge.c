/* test_merge.c - an MPI job's profile from its ranks' own files
 * (src/store/merge.c; the files written by the stream, src/store/stream.c,
 * as each rank of a run writes its own): finished ranks copied whole, a
 * rank killed before it finished recovered up to its last flush, a rank
 * without a file left out with a line, another run's file not taken, the
 * times of each rank on rank 0's clock, the file names. */

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "h5_fixtures.h"
#include "sp_merge.h"
#include "sp_stream.h"

#define CALLS 100

/* The job the next rank_file belongs to (its mpi_job). */
static int64_t job_id = 7;

/* A streamed file at path of one rank (of `size` ranks; 0: a serial run's,
 * a process of run --subprocesses with parent_pid): region "work" with
 * CALLS calls (at 10 * i + 5000 on the rank's own clock, 5 ns each) and
 * region "main" with one call still open when its block went, ending at
 * 9000. Finished into path, or (!finish) left in path.partial. */
static void stream_file(const char *path, int rank, int size, int64_t offset, int64_t pid, int64_t parent_pid,
			int finish)
{
	struct sp_error err = {0};
	struct sp_stream_config c = {
		.path = path, .rank = rank, .mpi_size = size, .clock_offset_ns = offset, .mpi_job = size ? job_id : 0,
		.pid = pid, .parent_pid = parent_pid, .run_start_ns = 1000, .hostname = "node1", .queue_bytes = 1 << 20,
		.interval_ns = 3600 * SP_STREAM_INTERVAL_NS,
	};
	int64_t s[CALLS], e[CALLS], main_s[] = {2000}, main_e[] = {SP_NO_TIME};
	for (int i = 0; i < CALLS; i++) {
		s[i] = 5000 + 10 * i;
		e[i] = s[i] + 5;
	}
	assert_ok(sp_stream_start(&c, &err), &err);
	assert_int_equal(sp_stream_name(0, "main"), 0);
	assert_int_equal(sp_stream_block(0, 1, main_s, main_e, NULL, 0, NULL), 0);
	assert_int_equal(sp_stream_name(1, "work"), 0);
	assert_int_equal(sp_stream_block(1, CALLS, s, e, NULL, 0, NULL), 1);
	sp_stream_flush(8000);
	if (!finish) {
		sp_stream_leave();   /* as a rank killed: no table, the stream group kept */
		return;
	}
	assert_int_equal(sp_stream_patch(0, 9000, 0, 0), 0);
	struct sp_profile *p = calloc(1, sizeof *p);
	p->format_version = 3;
	p->nranks = 1;
	p->ranks = calloc(1, sizeof *p->ranks);
	p->meta = calloc(1, sizeof *p->meta);
	if (size > 0) {   /* a serial run's has none */
		p->meta[0] = (struct sp_kv){strdup("mpi_size"), strdup("3"), SP_KV_FIXED};
		p->nmeta = 1;
	}
	struct sp_rank *rk = &p->ranks[0];
	rk->rank = rank;
	rk->parent_pid = parent_pid;
	rk->run_start_ns = 1000;
	rk->run_end_ns = 9500;
	rk->regions = calloc(2, sizeof *rk->regions);
	rk->nregions = 2;
	rk->regions[0].name = strdup("main");
	sp_stats_compute(&rk->regions[0].stats, main_s, (int64_t[]){9000}, 1);
	rk->regions[1].name = strdup("work");
	sp_stats_compute(&rk->regions[1].stats, s, e, CALLS);
	assert_ok(sp_stream_finish(p, NULL, &err), &err);
	sp_profile_free(p);
}

/* Rank r's file of job `job` (of `size` ranks), finished into
 * job.rank{r}, or (!finish) left in job.rank{r}.partial. */
static void rank_file(const char *job, int rank, int size, int64_t offset, int finish)
{
	char path[640];
	snprintf(path, sizeof path, "%s.rank%d", job, rank);
	stream_file(path, rank, size, offset, 100 + rank, 0, finish);
}

static const struct sp_region_data *region(const struct sp_rank *rk, const char *name)
{
	for (size_t i = 0; i < rk->nregions; i++)
		if (strcmp(rk->regions[i].name, name) == 0)
			return &rk->regions[i];
	fail_msg("rank %d has no region %s", rk->rank, name);
	return NULL;
}

/* job + suffix made a minute older: an earlier job's file. */
static void age(const char *job, const char *suffix)
{
	char path[640];
	struct stat st;
	snprintf(path, sizeof path, "%s%s", job, suffix);
	assert_int_equal(stat(path, &st), 0);
	st.st_mtim.tv_sec -= 60;
	assert_int_equal(utimensat(AT_FDCWD, path, (struct timespec[]){st.st_atim, st.st_mtim}, 0), 0);
}

static int exists(const char *job, const char *suffix)
{
	char path[640];
	snprintf(path, sizeof path, "%s%s", job, suffix);
	return access(path, F_OK) == 0;
}

static void test_finished_and_killed_ranks_merge_into_one_file(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char job[600], out[600];
	snprintf(job, sizeof job, "%s", tpath("job.h5"));
	snprintf(out, sizeof out, "%s", tpath("merged.h5"));
	rank_file(job, 0, 3, 0, 1);
	rank_file(job, 1, 3, 1000, 1);    /* its clock 1000 ns ahead of rank 0's */
	rank_file(job, 2, 3, -500, 0);    /* killed: its partial file only */
	assert_true(exists(job, ".rank1") && exists(job, ".rank2.partial") && !exists(job, ".rank2"));
	assert_ok(sp_merge_ranks(job, out, 0, 0, NULL, 0, &rep, &err), &err);
	assert_int_equal(rep.nranks, 3);
	assert_int_equal(rep.in_out, 3);
	assert_int_equal(rep.ranks[0].state, SP_MERGE_FINISHED);
	assert_int_equal(rep.ranks[2].state, SP_MERGE_PARTIAL);
	assert_string_equal(rep.ranks[0].note, "");
	assert_non_null(strstr(rep.ranks[2].note, "rank 2 did not finish its profile"));
	assert_int_equal(rep.calls, 3 * (CALLS + 1));
	/* Its last flush: when its stream was closed (on rank 0's clock). */
	int64_t until = rep.ranks[2].partial_until_ns;
	assert_true(until > 9000);
	sp_merge_report_free(&rep);

	struct sp_profile *p = NULL;
	assert_ok(sp_h5_read(out, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(p->format_version, 3);
	assert_false(p->partial);
	assert_int_equal(p->nranks, 3);
	for (int r = 0; r < 3; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		int64_t offset = r == 1 ? 1000 : r == 2 ? -500 : 0;
		assert_int_equal(rk->rank, r);
		assert_int_equal(rk->clock_offset_ns, offset);
		assert_int_equal(rk->run_start_ns, 1000 - offset);
		const struct sp_region_data *w = region(rk, "work"), *m = region(rk, "main");
		assert_int_equal(w->stats.num_calls, CALLS);
		/* Every time on rank 0's clock, the table's too. */
		assert_int_equal(w->starts[0], 5000 - offset);
		assert_int_equal(w->ends[CALLS - 1], 5000 + 10 * (CALLS - 1) + 5 - offset);
		assert_int_equal(w->stats.first_start_ns, 5000 - offset);
		assert_int_equal(w->stats.total_ns, 5 * CALLS);
		assert_int_equal(m->starts[0], 2000 - offset);
		/* main was open: patched when finished, else ended at the last
		 * flush. */
		assert_int_equal(m->ends[0], r == 2 ? until : 9000 - offset);
	}
	const char *hosts = sp_profile_meta(p, "hostnames"), *size = sp_profile_meta(p, "mpi_size");
	assert_non_null(hosts);
	assert_string_equal(hosts, "node1: 0-2");
	assert_string_equal(size, "3");
	assert_string_equal(sp_profile_meta(p, "incomplete_ranks"), "2");
	char v[32];
	snprintf(v, sizeof v, "%lld", (long long)until);
	assert_string_equal(sp_profile_meta(p, "partial_until_ns"), v);
	assert_null(sp_profile_meta(p, "missing_ranks"));
	sp_profile_free(p);
	/* Recover only reads the rank files. */
	assert_true(exists(job, ".rank0") && exists(job, ".rank1") && exists(job, ".rank2.partial"));
	/* The summary needs no event: the table of every rank. */
	struct sp_h5_stream *st = NULL;
	assert_ok(sp_h5_stream_open(out, &st, &err), &err);
	assert_int_equal(sp_h5_stream_profile(st)->nranks, 3);
	sp_h5_stream_close(st);
	teardown(NULL);
	setup(NULL);
}

static void test_a_missing_rank_and_another_runs_file_are_left_out(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char job[600];
	snprintf(job, sizeof job, "%s", tpath("j.h5"));
	job_id = 6;
	rank_file(job, 3, 5, 0, 1);       /* an earlier run of 5 ranks left it */
	age(job, ".rank3");
	job_id = 7;
	rank_file(job, 0, 3, 0, 1);
	rank_file(job, 2, 3, 0, 1);
	/* The end of a run: the merge writes the job's own OUT and removes
	 * the rank files it took. */
	assert_ok(sp_merge_ranks(job, job, 0, 0, NULL, 1, &rep, &err), &err);
	assert_int_equal(rep.nranks, 3);
	assert_int_equal(rep.in_out, 2);
	assert_int_equal(rep.ranks[1].state, SP_MERGE_NONE);
	assert_non_null(strstr(rep.ranks[1].note, "rank 1: no file"));
	sp_merge_report_free(&rep);
	assert_false(exists(job, ".rank0") || exists(job, ".rank2"));
	assert_true(exists(job, ".rank3"));
	struct sp_profile *p = NULL;
	assert_ok(sp_h5_read(job, SP_READ_SUMMARY, &p, &err), &err);
	assert_int_equal(p->nranks, 2);
	assert_int_equal(p->ranks[1].rank, 2);
	assert_string_equal(sp_profile_meta(p, "missing_ranks"), "1");
	assert_string_equal(sp_profile_meta(p, "hostnames"), "node1: 0,2");
	sp_profile_free(p);
	teardown(NULL);
	setup(NULL);
}

static void test_an_earlier_jobs_file_of_the_same_size_is_left_out(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char job[600];
	snprintf(job, sizeof job, "%s", tpath("e.h5"));
	/* An earlier job of as many ranks finished rank 1's file; this one's
	 * rank 1 died before it had one. */
	job_id = 6;
	rank_file(job, 1, 2, 0, 1);
	age(job, ".rank1");
	job_id = 7;
	rank_file(job, 0, 2, 0, 0);
	assert_ok(sp_merge_ranks(job, tpath("e_out.h5"), 0, 0, NULL, 0, &rep, &err), &err);
	assert_int_equal(rep.nranks, 2);
	assert_int_equal(rep.in_out, 1);
	assert_int_equal(rep.ranks[0].state, SP_MERGE_PARTIAL);
	assert_int_equal(rep.ranks[1].state, SP_MERGE_NONE);
	assert_non_null(strstr(rep.ranks[1].note, "another run's (an earlier job"));
	sp_merge_report_free(&rep);
	struct sp_profile *p = NULL;
	assert_ok(sp_h5_read(tpath("e_out.h5"), SP_READ_SUMMARY, &p, &err), &err);
	assert_int_equal(p->nranks, 1);
	assert_string_equal(sp_profile_meta(p, "missing_ranks"), "1");
	sp_profile_free(p);
	teardown(NULL);
	setup(NULL);
}

static void test_a_rank_taken_from_its_partial_file_has_no_line_left_out(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char job[600], fin[640], par[640];
	snprintf(job, sizeof job, "%s", tpath("q.h5"));
	rank_file(job, 0, 2, 0, 1);
	rank_file(job, 1, 2, 0, 1);
	/* Rank 1 was killed once its file was finished, before the rename;
	 * something unreadable took the finished file's name. */
	snprintf(fin, sizeof fin, "%s.rank1", job);
	snprintf(par, sizeof par, "%s.rank1.partial", job);
	assert_int_equal(rename(fin, par), 0);
	FILE *f = fopen(fin, "w");
	assert_non_null(f);
	fputs("not a profile\n", f);
	fclose(f);
	assert_ok(sp_merge_ranks(job, tpath("q_out.h5"), 0, 0, NULL, 0, &rep, &err), &err);
	assert_int_equal(rep.in_out, 2);
	assert_int_equal(rep.ranks[1].state, SP_MERGE_FINISHED);
	assert_string_equal(rep.ranks[1].note, "");
	sp_merge_report_free(&rep);
	teardown(NULL);
	setup(NULL);
}

static void test_what_the_ranks_said_is_taken(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char job[600];
	snprintf(job, sizeof job, "%s", tpath("s.h5"));
	rank_file(job, 0, 2, 0, 1);
	rank_file(job, 1, 2, 0, 1);
	/* Rank 1 said it had no file: the one there is not its. */
	const enum sp_merge_state said[] = {SP_MERGE_FINISHED, SP_MERGE_NONE};
	assert_ok(sp_merge_ranks(job, job, 2, 7, said, 1, &rep, &err), &err);
	assert_int_equal(rep.in_out, 1);
	assert_non_null(strstr(rep.ranks[1].note, "rank 1: no file of its own"));
	sp_merge_report_free(&rep);
	/* No rank's file at all. */
	assert_int_equal(sp_merge_ranks(tpath("none.h5"), tpath("none.h5"), 0, 0, NULL, 0, &rep, &err), SP_ENOENT);
	assert_non_null(strstr(err.msg, "no rank files"));
	sp_merge_report_free(&rep);
	teardown(NULL);
	setup(NULL);
}

/* run --subprocesses: the run's own file and its children's (each of rank
 * 0) become ranks 0.. of OUT, the run's own replaced by OUT; a child killed
 * is recovered up to its last flush with its parent_pid, one without a
 * file is left out; no file is removed. */
static void test_processes_merge_into_the_run_s_own_file(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char out[600], a[600], b[600], c[600];
	snprintf(out, sizeof out, "%s", tpath("out.h5"));
	snprintf(a, sizeof a, "%s", tpath("proc-201.h5"));
	snprintf(b, sizeof b, "%s", tpath("proc-202.h5"));
	snprintf(c, sizeof c, "%s", tpath("proc-203.h5"));
	stream_file(out, 0, 0, 0, 100, 0, 1);
	stream_file(a, 0, 0, 0, 201, 100, 1);
	stream_file(b, 0, 0, 0, 202, 201, 0);   /* killed: its partial file only */
	const char *files[] = {out, a, b, c};
	assert_ok(sp_merge_processes(files, 4, out, NULL, &rep, &err), &err);
	assert_int_equal(rep.nranks, 4);
	assert_int_equal(rep.in_out, 3);
	assert_int_equal(rep.ranks[0].state, SP_MERGE_FINISHED);
	assert_int_equal(rep.ranks[1].state, SP_MERGE_FINISHED);
	assert_int_equal(rep.ranks[2].state, SP_MERGE_PARTIAL);
	assert_int_equal(rep.ranks[3].state, SP_MERGE_NONE);
	assert_int_equal(rep.calls, 3 * (CALLS + 1));
	int64_t until = rep.ranks[2].partial_until_ns;
	/* The notes name processes. */
	assert_non_null(strstr(rep.ranks[2].note, "process 2 did not finish its profile"));
	assert_non_null(strstr(rep.ranks[3].note, "process 3: no file ("));
	sp_merge_report_free(&rep);

	struct sp_profile *p = NULL;
	assert_ok(sp_h5_read(out, SP_READ_EVENTS, &p, &err), &err);
	assert_int_equal(p->format_version, 3);
	assert_int_equal(p->nranks, 3);
	const int64_t pid[] = {100, 201, 202}, parent[] = {0, 100, 201};
	for (int r = 0; r < 3; r++) {
		const struct sp_rank *rk = &p->ranks[r];
		assert_int_equal(rk->rank, r);
		assert_int_equal(rk->pid, pid[r]);
		assert_int_equal(rk->parent_pid, parent[r]);
		assert_int_equal(region(rk, "work")->stats.num_calls, CALLS);
		assert_int_equal(region(rk, "main")->ends[0], r == 2 ? until : 9000);
	}
	assert_string_equal(sp_profile_meta(p, "incomplete_ranks"), "2");
	assert_string_equal(sp_profile_meta(p, "missing_ranks"), "3");
	assert_null(sp_profile_meta(p, "mpi_size"));
	sp_profile_free(p);
	assert_true(exists(a, "") && exists(b, ".partial"));

	/* recover of a run killed: its own file is its partial one, whatever
	 * stands at files[0] (an earlier run's finished profile). */
	stream_file(a, 0, 0, 0, 999, 0, 0);   /* proc-201.h5.partial, of pid 999 */
	const enum sp_merge_state said[] = {SP_MERGE_PARTIAL};
	for (int partial = 0; partial < 2; partial++) {
		struct sp_profile *q = NULL;
		assert_ok(sp_merge_processes(files + 1, 1, c, partial ? said : NULL, &rep, &err), &err);
		assert_int_equal(rep.ranks[0].state, partial ? SP_MERGE_PARTIAL : SP_MERGE_FINISHED);
		sp_merge_report_free(&rep);
		assert_ok(sp_h5_read(c, SP_READ_SUMMARY, &q, &err), &err);
		assert_int_equal(q->ranks[0].pid, partial ? 999 : 201);
		sp_profile_free(q);
	}
	teardown(NULL);
	setup(NULL);
}

/* A partial file whose last block, written after its last flush, holds
 * a call that ended after it: the rank's run ends at that call's end, not
 * before it (at the flush). */
static void test_a_partial_rank_ends_at_its_last_call(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct sp_merge_report rep;
	char in[600], out[600];
	snprintf(in, sizeof in, "%s", tpath("proc-301.h5"));
	snprintf(out, sizeof out, "%s", tpath("out.h5"));
	struct sp_stream_config c = {
		.path = in, .pid = 301, .parent_pid = 300, .run_start_ns = 1000, .queue_bytes = 1 << 20,
		.interval_ns = 3600 * SP_STREAM_INTERVAL_NS,
	};
	/* A child process streams, then dies without a word (SIGKILL): its
	 * second block is on disk (written with a flush record that, as one
	 * handed over late, still says 8000). */
	pid_t pid = fork();
	if (pid == 0) {
		if (sp_stream_start(&c, &err) != SP_OK || sp_stream_name(0, "work") != 0 ||
		    sp_stream_block(0, 1, (int64_t[]){5000}, (int64_t[]){5005}, NULL, 0, NULL) != 0)
			_exit(1);
		sp_stream_flush(8000);
		if (sp_stream_block(0, 1, (int64_t[]){8100}, (int64_t[]){8500}, NULL, 0, NULL) != 1)
			_exit(1);
		sp_stream_flush(8000);
		sp_stream_quiesce();   /* the writer wrote both */
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	const char *files[] = {in};
	assert_ok(sp_merge_processes(files, 1, out, NULL, &rep, &err), &err);
	assert_int_equal(rep.ranks[0].state, SP_MERGE_PARTIAL);
	sp_merge_report_free(&rep);
	struct sp_profile *p = NULL;
	assert_ok(sp_h5_read(out, SP_READ_SUMMARY, &p, &err), &err);
	const struct sp_region_data *w = region(&p->ranks[0], "work");
	assert_int_equal(w->stats.num_calls, 2);
	assert_int_equal(p->ranks[0].run_end_ns, 8500);   /* its flush said 8000 */
	sp_profile_free(p);
	teardown(NULL);
	setup(NULL);
}

static void test_rank_file_names(void **state)
{
	(void)state;
	char *job = NULL, *f = sp_merge_rank_file("/d/out.h5", 12);
	int rank = 0;
	assert_string_equal(f, "/d/out.h5.rank12");
	free(f);
	assert_true(sp_merge_rank_of("/d/out.h5.rank12.partial", &job, &rank));
	assert_string_equal(job, "/d/out.h5");
	assert_int_equal(rank, 12);
	free(job);
	assert_true(sp_merge_rank_of("out.rank0", &job, &rank));
	assert_string_equal(job, "out");
	assert_int_equal(rank, 0);
	free(job);
	/* A serial run's partial file, names that only look alike. */
	assert_false(sp_merge_rank_of("/d/out.h5.partial", &job, &rank));
	assert_false(sp_merge_rank_of("/d/.rank3", &job, &rank));
	assert_false(sp_merge_rank_of("/d/out.rank3x", &job, &rank));
	assert_null(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finished_and_killed_ranks_merge_into_one_file),
		cmocka_unit_test(test_a_missing_rank_and_another_runs_file_are_left_out),
		cmocka_unit_test(test_an_earlier_jobs_file_of_the_same_size_is_left_out),
		cmocka_unit_test(test_a_rank_taken_from_its_partial_file_has_no_line_left_out),
		cmocka_unit_test(test_what_the_ranks_said_is_taken),
		cmocka_unit_test(test_processes_merge_into_the_run_s_own_file),
		cmocka_unit_test(test_a_partial_rank_ends_at_its_last_call),
		cmocka_unit_test(test_rank_file_names),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return cmocka_run_group_tests_name("merge", tests, setup, teardown);
}
