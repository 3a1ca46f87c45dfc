/* h5noros3.c - linked only with HDF5's static archive (the Makefile's
 * HDF5_STATIC, scripts/hdf5-static-probe.sh), before it.
 *
 * HDF5's file-access property code refers to its read-only S3 driver through
 * H5FD_ros3_init (to honour HDF5_DRIVER=ros3), so the archive would bring
 * that driver, and with it libcurl and libcrypto. Binding libcurl and its
 * thirty-odd libraries at start-up costs the dynamic loader ~14 million
 * instructions (a few milliseconds) on every run, more than the rest of a
 * short run's overhead. scope-profiler reads and writes local files only, so
 * this definition is found first and says the driver is not there: HDF5 then
 * refuses HDF5_DRIVER=ros3 as an unknown driver. It is hidden, so that a
 * profiled script's h5py, which loads the shared libhdf5 with its own S3
 * driver, never binds to it. */
#include <H5Ipublic.h>

#pragma GCC visibility push(hidden)
hid_t H5FD_ros3_init(void);

hid_t H5FD_ros3_init(void)
{
	return H5I_INVALID_HID;
}
#pragma GCC visibility pop
