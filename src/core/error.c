/* error.c - the library's one error type: its descriptions and filling it
 * (see sp_error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "sp_error.h"

const char *sp_strerror(enum sp_err code)
{
	switch (code) {
	case SP_OK: return "success";
	case SP_ENOMEM: return "out of memory";
	case SP_EIO: return "input/output error";
	case SP_ENOENT: return "no such file";
	case SP_ENOTHDF5: return "not an HDF5 file";
	case SP_ENOTPROF: return "not a scope-profiler file";
	case SP_ECORRUPT: return "corrupt profile";
	case SP_EINVAL: return "invalid argument";
	case SP_EEXIST: return "a file that must not be replaced";
	}
	return "unknown error";
}

enum sp_err sp_error_set(struct sp_error *err, enum sp_err code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}
