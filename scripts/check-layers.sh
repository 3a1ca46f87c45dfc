#!/bin/sh
# check-layers.sh - the layer rule of src/ (see README "Layout"), run by make
# before anything is compiled: <Python.h> only under src/python, <hdf5.h> and
# <mpi.h> only under src/store, and none of them in include/ (the C APIs).
# Prints each file that breaks it and exits 1.
cd "$(dirname "$0")/.." || exit 1
status=0
check() {	# $1 header, $2 the one folder allowed to include it
	for f in $(grep -l "^[[:space:]]*#[[:space:]]*include[[:space:]]*<$1>" src/*/*.[ch] include/*.h 2>/dev/null); do
		case $f in "$2"/*) ;; *)
			echo "scope-profiler build: $f includes <$1>, which only $2/ may (layer rule)" >&2
			status=1;;
		esac
	done
}
check Python.h src/python
check hdf5.h src/store
check mpi.h src/store
exit $status
