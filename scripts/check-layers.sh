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
# With --graph LAYER [OBJDIR] it checks nothing and prints the graph of
# src/LAYER: the sp_*.h headers each file includes, the files each file
# calls into (nm of OBJDIR/LAYER/*.o, OBJDIR build/obj by default: "a -> b
# (n)", n symbols of b that a uses) and the files that call each other in
# a circle, directly or through others (or "cycles: none").
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

# The graph of one layer (--graph LAYER [OBJDIR]), for reading.
if [ "$1" = --graph ]; then
	layer=$2 objdir=${3:-build/obj}
	[ -d "src/$layer" ] || { echo "check-layers.sh --graph: no src/$layer" >&2; exit 2; }
	echo "src/$layer: includes (quoted sp_*.h)"
	for f in src/"$layer"/*.[ch]; do
		h=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(sp_[a-z0-9_]*\.h\)".*/\1/p' "$f" | tr '\n' ' ')
		[ -z "$h" ] || echo "  ${f##*/}: $h"
	done
	# The objects of the layer's sources (not one left by a file since renamed).
	set --
	for o in "$objdir/$layer"/*.o; do
		n=${o##*/}
		[ ! -f "src/$layer/${n%.o}.c" ] || set -- "$@" "$o"
	done
	[ -e "$1" ] || { echo "check-layers.sh --graph: no objects in $objdir/$layer (build first)" >&2; exit 2; }
	echo "src/$layer: calls between its files ($objdir/$layer/*.o)"
	nm -A -g "$@" | awk '
	{	o = $0; sub(/:.*/, "", o); k = split(substr($0, length(o) + 2), f, " ")
		n = split(o, p, "/"); sub(/\.o$/, "", p[n])
		if (k == 2 && f[1] == "U") print "U", f[2], p[n]
		else if (k == 3 && f[2] ~ /^[TDBRGSVW]$/) print "D", f[3], p[n]
	}' | awk '
	$1 == "D" { def[$2] = $3; node[$3] = 1; next }
	{ use[++nu] = $3 " " $2; node[$3] = 1 }
	END {
		for (i = 1; i <= nu; i++) {
			split(use[i], u, " ")
			if ((u[2] in def) && def[u[2]] != u[1]) {
				e = u[1] " " def[u[2]]
				if (!(e in count)) edges[++ne] = e
				count[e]++; reach[e] = 1
			}
		}
		for (i = 1; i <= ne; i++) { split(edges[i], u, " "); line[i] = sprintf("  %s -> %s (%d)", u[1], u[2], count[edges[i]]) }
		# sorted output: insertion sort of the few lines
		for (i = 2; i <= ne; i++) for (j = i; j > 1 && line[j] < line[j - 1]; j--) { t = line[j]; line[j] = line[j - 1]; line[j - 1] = t }
		for (i = 1; i <= ne; i++) print line[i]
		# cycles: a and b reach each other (transitive closure)
		nn = 0; for (a in node) name[++nn] = a
		for (k = 1; k <= nn; k++) for (i = 1; i <= nn; i++) if ((name[i] " " name[k]) in reach)
			for (j = 1; j <= nn; j++) if ((name[k] " " name[j]) in reach) reach[name[i] " " name[j]] = 1
		cycles = ""
		for (i = 1; i <= nn; i++) {
			if (done[name[i]] || !((name[i] " " name[i]) in reach)) continue
			c = name[i]
			for (j = 1; j <= nn; j++) if (j != i && ((name[i] " " name[j]) in reach) && ((name[j] " " name[i]) in reach)) { c = c " " name[j]; done[name[j]] = 1 }
			done[name[i]] = 1; cycles = cycles "\n  " c
		}
		print "src/" layer ": cycles" (cycles == "" ? ": none" : ":" cycles)
	}' layer="$layer"
	exit 0
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
		  "sp_grow.h sp_hosts.h sp_session.h sp_likwid.h sp_thread.h", a, " "); for (i = 1; i <= n; i++) owner[a[i]] = "core"
	n = split("sp_h5.h sp_pack.h sp_mpi.h sp_mpicalls.h sp_outpath.h sp_children.h sp_stream.h sp_merge.h", a, " "); for (i = 1; i <= n; i++) owner[a[i]] = "store"
	n = split("sp_analysis.h sp_render.h sp_nest.h sp_diff.h sp_export.h sp_json.h sp_table.h " \
		  "sp_select.h sp_plot.h sp_tree.h", a, " "); for (i = 1; i <= n; i++) owner[a[i]] = "report"
	# generated into build/ from src/python/*.py
	owner["sp_pysrc.h"] = owner["sp_pyshim.h"] = owner["sp_pycharts.h"] = "python"
	n = split("ipython_magics plotting_scripts post_processing", a, " "); for (i = 1; i <= n; i++) owner["sp_pymod_" a[i] ".h"] = "python"
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
