#!/bin/sh
# check-layers.sh - the layer rule of src/ (see README "Layout"), run by make
# before anything is compiled (1, 2) and, with --symbols OBJ..., before the
# executable is linked (3). Prints each breach and exits 1.
#  1. <Python.h> only under src/python; <hdf5.h> and <mpi.h> only under
#     src/store; none of them in include/ (the C APIs). Quoted or angled.
#  2. Data flows one way: a layer includes the headers of its own layer and
#     of the layers below it, never above. From the bottom: core (the model),
#     store (the file, MPI), report (analysis, rendering), python (the
#     embedded module and the run), cli (the commands). Each header of
#     include/ belongs to one layer (the table below: a new header must be
#     added to it); a header in src/LAYER/ belongs to LAYER.
#  3. The same direction for calls, which includes alone do not show (a
#     function declared in a lower layer's header but defined above): of
#     the objects named (BUILD/obj/LAYER/*.o, as the Makefile lists them),
#     none references a global symbol that only a layer above its own
#     defines (nm: defined symbols per layer, undefined ones per object).
cd "$(dirname "$0")/.." || exit 1
status=0
breach() {
	echo "scope-profiler build: $1 (layer rule, scripts/check-layers.sh)" >&2
	status=1
}
report() {	# each line of $1 is a breach
	[ -z "$1" ] || { echo "$1" | while read -r line; do breach "$line"; done; status=1; }
}

# 3. Calls, from the objects: one nm for all, "D symbol layer" and "U
# symbol object" lines into one awk pass; a symbol defined in several
# layers belongs to the lowest.
if [ "$1" = --symbols ]; then
	shift
	breaches=$(nm -A -g "$@" | awk '
	{	# "OBJ:      U sym" or "OBJ:VALUE T sym"
		o = $0; sub(/:.*/, "", o); k = split(substr($0, length(o) + 2), f, " ")
		if (k == 2 && f[1] == "U") print "U", f[2], o
		else if (k == 3 && f[2] ~ /^[TDBRGSVW]$/) { n = split(o, p, "/"); print "D", f[3], p[n - 1] }
	}' | awk '
	BEGIN { split("core store report python cli", names, " "); for (i = 1; i <= 5; i++) height[names[i]] = i }
	$1 == "D" { if (!($2 in def) || height[$3] < height[def[$2]]) def[$2] = $3; next }
	{ use[++n] = $3 " " $2 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], u, " "); k = split(u[1], p, "/"); mine = p[k - 1]
			if ((u[2] in def) && height[def[u[2]]] > height[mine])
				printf "%s (%s) calls %s, defined in %s: a layer may not call a layer above it\n",
					u[1], mine, u[2], def[u[2]]
		}
	}')
	report "$breaches"
	exit $status
fi

# 1. The heavy headers.
heavy() {	# $1 header, $2 the one folder allowed to include it
	for f in $(grep -lE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]$1[>\"]" \
			src/*/*.[ch] include/*.h 2>/dev/null); do
		case $f in "$2"/*) ;; *) breach "$f includes $1, which only $2/ may";; esac
	done
}
heavy Python.h src/python
heavy hdf5.h src/store
heavy mpi.h src/store

# 2. The direction: every quoted sp_*.h include, checked in one pass.
out=$(ls src/*/*.h | sed 's#^src/\([a-z]*\)/\(.*\)#H \2 \1#'
      grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"sp_[a-z0-9_]*\.h"' \
		src/*/*.[ch] include/*.h | sed 's#^\([^:]*\):.*"\(sp_[a-z0-9_]*\.h\)".*#I \1 \2#')
breaches=$(echo "$out" | awk '
BEGIN {
	split("core store report python cli", names, " ")
	for (i = 1; i <= 5; i++) height[names[i]] = i
	n = split("sp_profile.h sp_error.h sp_clock.h sp_recorder.h sp_keytab.h sp_filter.h " \
		  "sp_grow.h sp_hosts.h sp_session.h sp_likwid.h", a, " "); for (i = 1; i <= n; i++) owner[a[i]] = "core"
	n = split("sp_h5.h sp_pack.h sp_mpi.h sp_mpicalls.h sp_outpath.h sp_children.h", a, " "); for (i = 1; i <= n; i++) owner[a[i]] = "store"
	n = split("sp_analysis.h sp_render.h sp_nest.h sp_diff.h sp_export.h sp_json.h sp_table.h " \
		  "sp_select.h sp_plot.h sp_tree.h", a, " "); for (i = 1; i <= n; i++) owner[a[i]] = "report"
	# generated into build/ from src/python/*.py
	owner["sp_pysrc.h"] = owner["sp_pyshim.h"] = owner["sp_pycharts.h"] = "python"
	owner["sp_timeline_js.h"] = "report"
}
$1 == "H" { owner[$2] = $3; next }
{
	file = $2; h = $3
	if (file ~ /^include\//) { mine = owner[substr(file, 9)] } else { split(file, p, "/"); mine = p[2] }
	if (!(h in owner))
		printf "%s includes %s, which no layer owns (add it to the table in the script)\n", file, h
	else if (height[owner[h]] > height[mine])
		printf "%s (%s) includes %s (%s): a layer may not include a layer above it\n", file, mine, h, owner[h]
}')
report "$breaches"
exit $status
