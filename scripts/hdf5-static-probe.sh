#!/bin/sh
# hdf5-static-probe.sh: whether, and how, the executable links HDF5 statically.
#
#   hdf5-static-probe.sh "CC [LDFLAGS]" NOROS3_OBJECT "HDF5_CFLAGS" "HDF5_LIBS"
#       prints the make settings that link HDF5's archive (the libhdf5.a, or
#       libhdf5_serial.a, that HDF5_LIBS names: the Makefile's, from pkg-config or
#       HDF5_DIR) with NOROS3_OBJECT (the compiled src/store/h5noros3.c) before it and
#       its symbols not exported, when a program that creates an HDF5 file links and
#       runs that way; else HDF5_STATIC := 0 (the shared libhdf5) and one line on
#       stderr saying why. The archive is the one the linker would meet first: in the
#       first folder (HDF5_LIBS's -L ones, then the system's) holding the library.
#
# Why: Debian's shared libhdf5 depends on libcurl (its S3 driver), whose thirty-odd
# libraries the dynamic loader binds at every start (~14 M instructions); the archive
# brings only what the executable uses, and h5noros3.c leaves the S3 driver out.
CC=${1:-cc} NOROS3=$2 cflags=$3 libs=$4
fallback() { echo "hdf5-static-probe: $*; linking the shared libhdf5" >&2; echo "HDF5_STATIC := 0"; exit 0; }

[ -n "$libs" ] || fallback "no HDF5 flags given"
dirs=
names=
for w in $libs; do
  case $w in
    -L*) dirs="$dirs ${w#-L}" ;;
    -l*) names="$names ${w#-l}" ;;
  esac
done
arch=$($CC -print-multiarch 2>/dev/null)
dirs="$dirs /usr/lib/$arch /usr/lib"
archive=
for n in $names; do
  for d in $dirs; do
    [ -f "$d/lib$n.a" ] && { archive=$d/lib$n.a; break 2; }
    [ -e "$d/lib$n.so" ] && continue 2      # the linker takes this shared one
  done
done
[ -n "$archive" ] || fallback "no static archive of $(echo $names) first in $(echo $dirs)"
[ -f "$NOROS3" ] || fallback "$NOROS3 is missing"

# What the archive needs from elsewhere: szip (libaec's libsz), zlib, libm, libdl.
deps="-lsz -lz -lm -ldl -lpthread"
tmp=$(mktemp -d) || fallback "no temporary folder"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/probe.c" <<'C'
#include <hdf5.h>
int main(void)
{
	/* A file in memory with a compressed dataset: what the writer uses. */
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 16, 0) < 0)
		return 1;
	hid_t f = H5Fcreate("probe.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	hsize_t n = 64;
	hid_t sp = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
	if (f < 0 || sp < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, &n) < 0 || H5Pset_deflate(dcpl, 1) < 0)
		return 1;
	hid_t d = H5Dcreate2(f, "x", H5T_STD_I64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	long long v[64] = {0};
	int bad = d < 0 || H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Fclose(f);
	H5Pclose(fapl);
	return bad;
}
C
if ! $CC $cflags -o "$tmp/probe" "$tmp/probe.c" "$NOROS3" -Wl,--exclude-libs,"$(basename "$archive")" \
     "$archive" $deps > "$tmp/log" 2>&1; then
  fallback "a program does not link with $archive ($(grep -m1 -o "undefined reference to [^ ]*" "$tmp/log" || head -c 200 "$tmp/log"))"
fi
(cd "$tmp" && ./probe) || fallback "a program linked with $archive fails"
if ldd "$tmp/probe" 2>/dev/null | grep -q libcurl; then
  fallback "$archive still needs libcurl"
fi
echo "HDF5_STATIC := 1"
echo "HDF5_STATIC_LIBS := $NOROS3 -Wl,--exclude-libs,$(basename "$archive") $archive $deps"
