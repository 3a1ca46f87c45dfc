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
#  4. --graph [LAYER] prints the include graph of one layer, python by
#     default: each file's local headers, the files they lead to (those
#     defining what a header declares), and the cycles (status 1 if any).
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

# 4. --graph [LAYER]: the include graph of src/LAYER (python by default): each
# file with the local headers it includes, then the files it depends on
# (each header it sees, its own includes followed, leads to the files that
# define what the header declares; a .c file included by another, as a
# hook's back end, is part of that one), then every cycle of that
# dependency, one line each ("no cycles" when none; exit status 1 when
# any).
if [ "$1" = --graph ]; then
	dir=src/${2:-python}
	awk -v dir="$dir" '
	function base(p) { sub(/.*\//, "", p); return p }
	# A header declares: names followed by "(" or ending an extern line,
	# outside static inline bodies (which the header defines itself).
	FNR == 1 { f = base(FILENAME); files[f] = 1; body = 0 }
	/^[ \t]*#[ \t]*include[ \t]*"/ {
		h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
		if (h ~ /\.c$/) part[h] = f   # compiled inside f (a back end)
		else if (system("test -f " dir "/" h) == 0) inc[f] = inc[f] " " h
		next
	}
	f ~ /\.h$/ {
		if (/^static/ || /^#define/) { body = 1 }
		if (body) { if (/^}/ || /^#define.*[^\\]$/) body = 0; next }
		if (/^[A-Za-z_]/ && !/^(typedef|struct [a-z_0-9]+ \{|enum|union|#)/) {
			line = $0
			if (match(line, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) {
				n = substr(line, RSTART, RLENGTH); sub(/[ \t]*\($/, "", n); decl[f, n] = 1
			}
			if (line ~ /^extern/) {	# each name before a "," or the ";"
				gsub(/\[[^]]*\]|;.*/, "", line); np = split(line, piece, ",")
				for (p = 1; p <= np; p++) {
					k = split(piece[p], w, /[ \t*]+/)
					for (i = k; i >= 1; i--) if (w[i] ~ /^[A-Za-z_]/) { decl[f, w[i]] = 1; break }
				}
			}
		}
		next
	}
	# A .c file defines: column-0 lines that are not static, a comment or a
	# directive: a function (a name before "(" on a line not ending in ";")
	# or a variable (the last name before "=", "[" or ";").
	/^[A-Za-z_]/ && !/^(static|extern|typedef|#)/ {
		line = $0
		if (line !~ /;[ \t]*$/ && match(line, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) {
			n = substr(line, RSTART, RLENGTH); sub(/[ \t]*\($/, "", n); def[n] = def[n] " " f
		} else if (line !~ /\(/) {
			sub(/[=\[;].*/, "", line); k = split(line, w, /[ \t*]+/)
			for (i = k; i >= 1; i--) if (w[i] ~ /^[A-Za-z_]/) { def[w[i]] = def[w[i]] " " f; break }
		}
	}
	END {
		# A file compiled inside another is part of it.
		for (f in part) { inc[part[f]] = inc[part[f]] inc[f]; parts[part[f]] = parts[part[f]] " + " f; delete files[f] }
		for (key in decl) {
			split(key, kh, SUBSEP); k = split(def[kh[2]], who, " ")
			for (i = 1; i <= k; i++) owner[kh[1], (who[i] in part) ? part[who[i]] : who[i]] = 1
		}
		nf = 0
		for (f in files) if (f ~ /\.c$/) list[++nf] = f
		for (i = 1; i <= nf; i++) for (j = i + 1; j <= nf; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
		print "include graph of " dir " (file: local headers included -> files they lead to)"
		# What a file sees: its headers and theirs, to the end.
		for (f in files) { k = split(inc[f], hs, " "); for (x = 1; x <= k; x++) sees[f, hs[x]] = 1 }
		do {
			grew = 0
			for (key in sees) {
				split(key, kk, SUBSEP); k = split(inc[kk[2]], hs, " ")
				for (x = 1; x <= k; x++) if (!((kk[1], hs[x]) in sees)) { sees[kk[1], hs[x]] = 1; grew = 1 }
			}
		} while (grew)
		for (i = 1; i <= nf; i++) {
			a = list[i]; to = ""
			for (j = 1; j <= nf; j++) {
				b = list[j]; if (a == b) continue
				for (key in sees) {
					split(key, kk, SUBSEP)
					if (kk[1] == a && (kk[2], b) in owner) { dep[a, b] = 1; to = to " " b; break }
				}
			}
			if (a in parts) print a parts[a] ":"
			printf "%-16s%s\n%16s->%s\n", (a in parts) ? "" : a ":", inc[a], "", to
		}
		# Cycles: the strongly connected components of more than one file
		# (reachability by Warshall over the few files of the layer).
		for (i = 1; i <= nf; i++) for (j = 1; j <= nf; j++) reach[i, j] = (list[i], list[j]) in dep
		for (k = 1; k <= nf; k++) for (i = 1; i <= nf; i++) if (reach[i, k]) for (j = 1; j <= nf; j++) if (reach[k, j]) reach[i, j] = 1
		cycles = 0
		for (i = 1; i <= nf; i++) {
			if (done[i]) continue
			c = list[i]; m = 1
			for (j = i + 1; j <= nf; j++) if (reach[i, j] && reach[j, i]) { c = c " " list[j]; done[j] = 1; m++ }
			if (m > 1) { print "cycle: " c; cycles++ }
		}
		if (!cycles) print "no cycles"
		exit cycles > 0
	}' "$dir"/*.h "$dir"/*.c
	exit $?
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
	owner["sp_pysrc.h"] = owner["sp_pyshim.h"] = "python"
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
