/* module.c - the built-in module `scope_profiler`: its definition, its
 * functions gathered from the files that own them (region_types.c,
 * session.c, tracer.c, pyresults.c, exitphase.c, charts.c, shim.c), and the
 * embedded Python layer (scope_profiler_py.py: the facade's classes, the read
 * API, the Python-level hooks of `run`), run in the module's namespace.
 *
 * Recording never runs Python code of ours: `with region:` calls the C
 * __enter__/__exit__ (region_paths.c), a decorated call goes through the
 * wrapper's vectorcall (wrapper.c). The mode (mode.c) is chosen at setup
 * by swapping the region objects' class and the wrappers' call function,
 * through the operations given here, so the recording path checks
 * nothing.
 *
 * Built twice: into the executable (registered before its interpreter
 * starts), and as the extension module of plain python, PyInit_scope_profiler
 * (-DSP_EXTENSION; what differs there is standalone.c's). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <marshal.h>

#include "sp_charts.h"
#include "sp_frozen.h"
#include "sp_generator.h"
#include "sp_exitphase.h"
#include "sp_lanes.h"
#include "sp_linetrace.h"
#include "sp_mode.h"
#include "sp_pymodule.h"
#include "sp_pyresults.h"
#include "sp_pysession.h"
#include "sp_region.h"
#include "sp_region_paths.h"
#include "sp_region_types.h"
#include "sp_shim.h"
#include "sp_standalone.h"
#include "sp_tracer.h"
#include "sp_wrapper.h"
#include "sp_pysrc.h"

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "scope_profiler",
	.m_doc = "scope-profiler: nanosecond timing regions for Python, recorded in C.",
	.m_size = -1,
};

/* Runs the embedded Python layer in the module's namespace. */
static int run_python_layer(PyObject *mod)
{
	PyObject *d = PyModule_GetDict(mod);
	if (PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) != 0)
		return -1;
	/* Compiled at build time by the same interpreter (see the Makefile). */
	PyObject *code = PyMarshal_ReadObjectFromString((const char *)scope_profiler_py_pyc,
							 (Py_ssize_t)scope_profiler_py_pyc_len);
	if (!code)
		return -1;
	if (!PyCode_Check(code)) {
		Py_DECREF(code);
		PyErr_SetString(PyExc_RuntimeError, "scope_profiler: the embedded Python layer is damaged");
		return -1;
	}
	PyObject *r = PyEval_EvalCode(code, d, d);
	Py_DECREF(code);
	if (!r)
		return -1;
	Py_DECREF(r);
	return 0;
}

static int add_types(PyObject *mod)
{
	static const struct { const char *name; PyTypeObject *type; } types[] = {
		{"TimeOnlyProfileRegion", &sp_TimeOnlyRegionType},
		{"DisabledProfileRegion", &sp_DisabledRegionType},
		{"ThreadsProfileRegion", &sp_ThreadsRegionType},
		{"LineProfileRegion", &sp_LinesRegionType},
		{"AggregateProfileRegion", &sp_AggregateRegionType},
		{"AsyncProfileRegion", &sp_AsyncRegionType},
		{"LikwidProfileRegion", &sp_LikwidRegionType},
		{"ProfiledFunction", &sp_ProfiledFunctionType},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (PyModule_AddObjectRef(mod, types[i].name, (PyObject *)types[i].type) < 0)
			return -1;
	return 0;
}

/* What applying a mode means (mode.c drives it, sp_mode.h). */
static const struct sp_mode_ops mode_ops = {
	.regions_apply = sp_region_types_apply,
	.regions_freeze = sp_region_types_freeze,
	.wrappers_apply = sp_wrappers_apply,
	.wrappers_choose = sp_wrappers_choose,
	.wrappers_freeze = sp_wrappers_freeze,
	.hook_mode = sp_tracer_mode,
	.hook_lanes_on = sp_tracer_lanes_on,
	.hook_stop_all = sp_tracer_stop_all,
};

static PyObject *module_init(void)
{
	sp_mode_init(&mode_ops);
	if (sp_regions_init() != 0 || sp_region_types_init() != 0 || sp_region_paths_init() != 0 ||
	    sp_wrapper_init() != 0 || sp_lanes_init() != 0)
		return NULL;
	PyObject *mod = PyModule_Create(&module_def);
	if (!mod)
		return NULL;
	if (add_types(mod) != 0 ||
	    PyModule_AddStringConstant(mod, "__version__", SP_VERSION) < 0 ||
	    PyModule_AddObjectRef(mod, "_lane_names", sp_lane_names) < 0 ||
	    PyModule_AddObjectRef(mod, "_registry", sp_registry) < 0)
		goto fail;
	if (sp_tracer_init() != 0 || sp_linetrace_init() != 0 || sp_results_init() != 0 ||
	    PyModule_AddFunctions(mod, sp_region_types_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_session_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_tracer_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_results_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_exitphase_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_charts_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_frozen_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_shim_methods) != 0 ||
	    PyModule_AddFunctions(mod, sp_generator_methods) != 0)
		goto fail;
	sp_session_bind(mod);
	if (run_python_layer(mod) != 0 || sp_wrapper_bind(mod) != 0 || sp_standalone_init(mod) != 0)
		goto fail;
	/* The importing thread (the main thread under `run`) is lane 0. */
	sp_current_lane();
	return mod;
fail:
	Py_DECREF(mod);
	return NULL;
}

int sp_pymodule_register(void)
{
	return PyImport_AppendInittab("scope_profiler", module_init);
}

#ifdef SP_EXTENSION
/* The same module imported by plain python (the extension module, see
 * standalone.c): its init function, the one symbol it exports. */
PyMODINIT_FUNC PyInit_scope_profiler(void)
{
	return module_init();
}
#endif
