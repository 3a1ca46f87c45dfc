/* standalone.c - the module imported by plain python and Jupyter (the
 * extension module, built with -DSP_EXTENSION): its init function and what
 * differs there from the module built into the executable, which `run`
 * configures before the script starts (run_session.c). Without `run`:
 * regions record nothing until setup(); a session left open is finalized at
 * interpreter exit; what only the executable can do (MPI calls timed
 * through its MPI profiling interface) is refused naming `scope-profiler
 * run`; under an MPI launcher each rank writes its own file. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sp_mpi.h"
#include "sp_outpath.h"
#include "sp_mode.h"
#include "sp_recorder.h"
#include "sp_standalone.h"

#ifdef SP_EXTENSION

int sp_standalone(void)
{
	return 1;
}

int sp_standalone_init(PyObject *mod)
{
	/* No session yet: nothing records, but decorating still wraps, so
	 * that the usual script (decorated at import, setup() in main) and a
	 * notebook's cells (setup() after the definitions) record. */
	sp_mode_off(SP_DEFAULT_BUFFER_LIMIT);
	PyObject *atexit = PyImport_ImportModule("atexit");
	PyObject *hook = atexit ? PyObject_GetAttrString(mod, "_finalize_at_exit") : NULL;
	PyObject *r = hook ? PyObject_CallMethod(atexit, "register", "O", hook) : NULL;
	Py_XDECREF(r);
	Py_XDECREF(hook);
	Py_XDECREF(atexit);
	return r ? 0 : -1;
}

int sp_standalone_settings(struct sp_settings *s, char *buf, size_t len)
{
	if (s->mpi_calls && !s->disable) {
		PyErr_SetString(PyExc_RuntimeError, "profile_mpi_calls=True needs `scope-profiler run` "
				"(mpirun -n N scope-profiler run --mpi-calls script.py): the MPI calls are timed "
				"through the executable's MPI profiling interface, which a module imported by "
				"plain python cannot put before mpi4py's MPI library");
		return -1;
	}
	static int said;
	int rank = sp_mpi_launch_rank();
	if (rank == 0 && !said && !s->disable && !s->no_output) {
		said = 1;
		fprintf(stderr, "scope-profiler: warning: under MPI the module imported by plain python "
			"writes one file per rank (<file_path>.rank<N>); `mpirun -n N scope-profiler run "
			"script.py` writes one merged file\n");
	}
	if (s->outfile && s->outfile[0] != '/') {
		struct sp_error err = {0};
		if (sp_outpath_absolute(s->outfile, buf, len, &err) != SP_OK) {
			PyErr_Format(err.code == SP_EIO ? PyExc_OSError : PyExc_ValueError,
				     "file_path: %s%s", err.msg,
				     err.code == SP_EIO ? "" : "; give an absolute path or work from a shorter folder");
			return -1;
		}
		s->outfile = buf;
	}
	return 0;
}

const char *sp_standalone_outfile(const char *path, char *buf, size_t len)
{
	int rank = sp_mpi_launch_rank();
	if (!path || rank < 0)
		return path;
	snprintf(buf, len, "%s.rank%d", path, rank);
	return buf;
}

#else /* the executable: `run` sets the session up */

int sp_standalone(void)
{
	return 0;
}

int sp_standalone_init(PyObject *mod)
{
	return 0;
}

int sp_standalone_settings(struct sp_settings *s, char *buf, size_t len)
{
	return 0;
}

const char *sp_standalone_outfile(const char *path, char *buf, size_t len)
{
	return path;
}

#endif
