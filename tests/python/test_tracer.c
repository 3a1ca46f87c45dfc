/* test_tracer.c - unit tests of the --recursive hook's code object -> region
 * cache, in an embedded interpreter with the built-in module: classified
 * once per code object, one region per <module>.<qualname>, foreign code
 * skipped, explicit regions not counted twice, and no stale entry when code
 * objects die and their addresses are reused. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_pymodule.h"
#include "sp_region.h"

/* Runs Python source in a fresh __main__-like namespace; its asserts are
 * the test's. Code given to own() is compiled as if from a user's file
 * (PyRun_String's own code is "<string>", which the hook skips). */
static void run_py(const char *src)
{
	PyObject *globals = PyDict_New();
	assert_non_null(globals);
	PyDict_SetItemString(globals, "__name__", PyUnicode_FromString("__main__"));
	PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
	PyObject *r = PyRun_String(src, Py_file_input, globals, globals);
	if (!r)
		PyErr_Print();
	assert_non_null(r);
	Py_DECREF(r);
	Py_DECREF(globals);
}

static void run_pair(const char *a, const char *b)
{
	char *src = malloc(strlen(a) + strlen(b) + 1);
	assert_non_null(src);
	strcpy(src, a);
	strcat(src, b);
	run_py(src);
	free(src);
}

static const char *prelude =
	"import gc, scope_profiler as sp\n"
	"sp._reset()\n"
	"sp._tracer_configure(False, (), (), ('/usr/lib/python3.11/',))\n"
	"def own(src, module='__main__'):\n"
	"    ns = {'__name__': module}\n"
	"    exec(compile(src, '/home/user/project/own.py', 'exec'), ns)\n"
	"    return ns\n";

static void test_one_region_per_code_object(void **state)
{
	run_pair(prelude, "f = own('def f(): pass')['f']\n"
	       "sp._tracer_start()\n"
	       "for _ in range(7): f()\n"
	       "sp._tracer_stop_all()\n"
	       "assert sp.get_region('__main__.f').num_calls == 7\n"
	       "assert not sp._tracer_active()\n");
}

static void test_same_qualname_in_two_modules(void **state)
{
	run_pair(prelude, "a, b = own('def g(): pass', 'mod_a'), own('def g(): pass', 'mod_b')\n"
	       "sp._tracer_start()\n"
	       "a['g'](); b['g'](); b['g']()\n"
	       "sp._tracer_stop_all()\n"
	       "assert sp.get_region('mod_a.g').num_calls == 1\n"
	       "assert sp.get_region('mod_b.g').num_calls == 2\n");
}

static void test_foreign_and_explicit_code_skipped(void **state)
{
	run_pair(prelude, "ns = {'__name__': 'stdlibish'}\n"
	       "exec(compile('def s(): pass', '/usr/lib/python3.11/fake.py', 'exec'), ns)\n"
	       "mine = own('def mine(): pass')['mine']\n"
	       "explicit = sp.profile('explicit_region')(mine)\n"
	       "sp._tracer_start()\n"
	       "ns['s'](); explicit()\n"
	       "sp._tracer_stop_all()\n"
	       "assert 'stdlibish.s' not in sp._registry\n"
	       "assert '__main__.mine' not in sp._registry\n"
	       "assert sp.get_region('explicit_region').num_calls == 1\n");
}

static void test_dead_code_objects_leave_no_stale_entry(void **state)
{
	run_pair(prelude, "sp._tracer_start()\n"
	       "for i in range(200):\n"
	       "    ns = own(f'def h{i}(): pass', 'gen')\n"
	       "    ns[f'h{i}']()\n"
	       "    del ns\n"
	       "    gc.collect()\n"
	       "sp._tracer_stop_all()\n"
	       "for i in range(200):\n"
	       "    assert sp.get_region(f'gen.h{i}').num_calls == 1, i\n");
}

/* A call still open when the hook stops is ended then: its end is a time, not
 * SP_NO_TIME (read from the region's buffer: no numpy needed). */
static void test_open_calls_closed_when_stopped(void **state)
{
	run_pair(prelude, "outer = own('def outer(stop):\\n    stop()')['outer']\n"
	       "sp._tracer_start()\n"
	       "outer(sp._tracer_stop_all)\n"
	       "assert sp.get_region('__main__.outer').num_calls == 1\n");
	PyObject *m = PyImport_ImportModule("scope_profiler");
	assert_non_null(m);
	PyObject *r = PyObject_CallMethod(m, "get_region", "s", "__main__.outer");
	assert_non_null(r);
	const struct sp_buf *b = &((RegionObject *)r)->buf;
	assert_int_equal(b->n, 1);
	assert_true(b->ends[0] != SP_NO_TIME);
	assert_true(b->ends[0] >= b->starts[0]);
	Py_DECREF(r);
	Py_DECREF(m);
}

static int setup(void **state)
{
	if (sp_pymodule_register() != 0)
		return -1;
	Py_Initialize();
	PyObject *m = PyImport_ImportModule("scope_profiler");
	if (!m) {
		PyErr_Print();
		return -1;
	}
	Py_DECREF(m);
	return 0;
}

static int teardown(void **state)
{
	return Py_FinalizeEx() == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_region_per_code_object),
		cmocka_unit_test(test_same_qualname_in_two_modules),
		cmocka_unit_test(test_foreign_and_explicit_code_skipped),
		cmocka_unit_test(test_dead_code_objects_leave_no_stale_entry),
		cmocka_unit_test(test_open_calls_closed_when_stopped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
