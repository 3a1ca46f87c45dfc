/* meta.c - a profile's metadata (sp_meta.h): who ran what, where, when,
 * and how it was recorded, as the file's /metadata attributes. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "sp_lanes.h"
#include "sp_meta.h"
#include "sp_mpi.h"
#include "sp_nvtx.h"

static int meta_add(struct sp_meta *m, const char *key, const char *value, int own)
{
	m->kv[m->n].key = (char *)key;
	m->kv[m->n].value = (char *)value;
	m->kv[m->n].type = SP_KV_TEXT;
	m->owned[m->n] = own ? (char *)value : NULL;
	if (!value) {
		PyErr_NoMemory();
		return -1;
	}
	m->n++;
	return 0;
}

/* meta_add with the attribute's type (enum sp_kv_type). */
static int meta_add_as(struct sp_meta *m, const char *key, const char *value, enum sp_kv_type type)
{
	if (meta_add(m, key, value, 0) != 0)
		return -1;
	m->kv[m->n - 1].type = type;
	return 0;
}

/* The local time now as ISO 8601 with microseconds and the UTC offset
 * ("2026-12-02T04:40:12.123456+01:00", what Python's
 * datetime.fromisoformat reads). */
static void iso_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char date[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	if (!localtime_r(&ts.tv_sec, &tm) || !strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "%lld", (long long)ts.tv_sec);
		return;
	}
	int off = (int)(tm.tm_gmtoff / 60) % (100 * 60);   /* at most 26 hours */
	snprintf(buf, len, "%s.%06d%c%02d:%02d", date, (int)(ts.tv_nsec / 1000) % 1000000,
		 off < 0 ? '-' : '+', abs(off) / 60, abs(off) % 60);
}

/* Who runs the profile, as Python's getpass.getuser() finds it: $LOGNAME,
 * $USER, $LNAME or $USERNAME, else the password database, else the uid. */
static const char *user_name(char *buf, size_t len)
{
	static const char *const vars[] = {"LOGNAME", "USER", "LNAME", "USERNAME"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return v;
	}
	struct passwd pw, *found = NULL;
	char pwbuf[1024];
	if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof pwbuf, &found) == 0 && found && found->pw_name) {
		snprintf(buf, len, "%s", found->pw_name);
		return buf;
	}
	snprintf(buf, len, "%lu", (unsigned long)geteuid());
	return buf;
}

/* OMP_NUM_THREADS's first number when it is a positive whole number
 * (nested levels are comma-separated), else 1: the OpenMP threads per rank
 * (omp_num_threads, as the original package falls back to) of total_cores. */
static long omp_threads(const char *omp)
{
	char *end;
	long n = omp ? strtol(omp, &end, 10) : 0;
	return omp && end != omp && (*end == '\0' || *end == ',') && n > 0 ? n : 1;
}

void sp_meta_free(struct sp_meta *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->owned[i]);
	m->n = 0;
}

/* " ".join(str(x) for x in seq), or "; ".join(f"{i}={x}") with numbered. */
static char *join_str(PyObject *seq, const char *sep, int numbered)
{
	PyObject *parts = PyList_New(0), *s = NULL;
	Py_ssize_t n = seq && PyList_Check(seq) ? PyList_GET_SIZE(seq) : 0;
	for (Py_ssize_t i = 0; parts && i < n; i++) {
		PyObject *item = numbered ? PyUnicode_FromFormat("%zd=%S", i, PyList_GET_ITEM(seq, i))
					  : PyObject_Str(PyList_GET_ITEM(seq, i));
		if (!item || PyList_Append(parts, item) != 0)
			Py_CLEAR(parts);
		Py_XDECREF(item);
	}
	PyObject *sep_s = parts ? PyUnicode_FromString(sep) : NULL;
	if (sep_s)
		s = PyUnicode_Join(sep_s, parts);
	Py_XDECREF(sep_s);
	Py_XDECREF(parts);
	/* An argument that was not UTF-8 (os.fsdecode's lone surrogates:
	 * sys.argv under plain python) is written \udcff: the text stays UTF-8 */
	PyObject *b = s ? PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace") : NULL;
	char *d = b ? strdup(PyBytes_AS_STRING(b)) : NULL;
	Py_XDECREF(b);
	Py_XDECREF(s);
	if (!d && !PyErr_Occurred())
		PyErr_NoMemory();
	return d;
}

int sp_meta_build(struct sp_meta *m, const struct sp_settings *s, const char *command_line, const char *recursive)
{
	struct utsname u;
	static char host[256], platform[800], version[64], size[16], limit[32], comp[16];
	static char stamp[64], cwd[PATH_MAX], cores[32], user[64], threads[32];
	uname(&u);
	snprintf(host, sizeof host, "%s", u.nodename);
	snprintf(platform, sizeof platform, "%s %s %s", u.sysname, u.release, u.machine);
	snprintf(version, sizeof version, "%.*s", (int)strcspn(Py_GetVersion(), " "), Py_GetVersion());
	snprintf(size, sizeof size, "%d", sp_mpi_active() ? sp_mpi_size() : 1);
	snprintf(limit, sizeof limit, "%lld", s->buffer_limit);
	if (s->compression)
		snprintf(comp, sizeof comp, "gzip=%d", s->compression);
	else
		snprintf(comp, sizeof comp, "none");
	const char *omp = getenv("OMP_NUM_THREADS");
	iso_now(stamp, sizeof stamp);
	if (!getcwd(cwd, sizeof cwd))
		cwd[0] = '\0';
	snprintf(threads, sizeof threads, "%ld", omp_threads(omp));
	snprintf(cores, sizeof cores, "%lld", (long long)(sp_mpi_active() ? sp_mpi_size() : 1) * omp_threads(omp));
	char *cmdline = command_line ? strdup(command_line)
		: join_str(PySys_GetObject("argv"), " ", 0);
	if (!cmdline && PyErr_Occurred())
		return -1;
	/* As the original package stores them: strings that h5py reads as
	 * str (variable-length UTF-8), the counts integers. */
	if (meta_add_as(m, "hostname", host, SP_KV_TEXT) || meta_add_as(m, "platform", platform, SP_KV_TEXT) ||
	    meta_add_as(m, "python_version", version, SP_KV_TEXT) ||
	    meta_add_as(m, "tool", "scope-profiler", SP_KV_TEXT) ||
	    meta_add_as(m, "tool_version", SP_VERSION, SP_KV_TEXT) ||
	    meta_add(m, "command_line", cmdline, 1) ||
	    meta_add_as(m, "mpi_size", size, SP_KV_INT) ||
	    meta_add_as(m, "mpi_library", sp_mpi_active() ? sp_mpi_library() : "", SP_KV_TEXT) ||
	    meta_add_as(m, "omp_num_threads", threads, SP_KV_INT) ||
	    meta_add_as(m, "mode", s->disable ? "disabled" : s->aggregate ? "aggregate"
			: s->track_async ? "async" : s->track_threads ? "threads" : "time_only", SP_KV_TEXT) ||
	    meta_add(m, "lanes", join_str(sp_lane_names, "; ", 1), 1) ||
	    meta_add_as(m, "recursive", recursive, SP_KV_TEXT) ||
	    meta_add_as(m, "line_profile", s->line_profile ? "true" : "false", SP_KV_TEXT) ||
	    meta_add_as(m, "mpi_calls", s->mpi_calls && !s->disable ? "true" : "false", SP_KV_TEXT) ||
	    meta_add_as(m, "nvtx", s->nvtx && !s->disable && sp_nvtx_built() ? "true" : "false", SP_KV_TEXT) ||
	    meta_add_as(m, "buffer_limit", limit, SP_KV_INT) ||
	    meta_add_as(m, "compression", comp, SP_KV_TEXT) ||
	    meta_add_as(m, "timestamp", stamp, SP_KV_TEXT) ||
	    meta_add_as(m, "scope_profiler_version", SP_VERSION, SP_KV_TEXT) ||
	    meta_add_as(m, "working_directory", cwd, SP_KV_TEXT) ||
	    meta_add_as(m, "total_cores", cores, SP_KV_INT) ||
	    meta_add_as(m, "user", user_name(user, sizeof user), SP_KV_TEXT))
		return -1;
	return 0;
}
