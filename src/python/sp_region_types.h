/* sp_region_types.h - the region classes (region_types.c), one per
 * recording mode, and the module functions over regions. Include
 * <Python.h> first. */
#ifndef SP_REGION_TYPES_H
#define SP_REGION_TYPES_H

/* The classes. They share the region object's layout (sp_region.h) and
 * the base sp_RegionBaseType, so a change of the mode switches an
 * object's class. */
extern PyTypeObject sp_RegionBaseType;
extern PyTypeObject sp_TimeOnlyRegionType, sp_ThreadsRegionType, sp_AsyncRegionType,
	sp_LinesRegionType, sp_DisabledRegionType, sp_AggregateRegionType,
	sp_MemoryRegionType, sp_MemoryThreadsRegionType, sp_MemoryAsyncRegionType,
	sp_LikwidRegionType, sp_NvtxRegionType, sp_NvtxAsyncRegionType, sp_GpuRegionType;

/* Every region takes the class of the mode (sp_mode) and the buffer and
 * columns it asks for (sp_region_fit); regions created later too. 0, or
 * -1 with an exception (mode.c's regions_apply). */
int sp_region_types_apply(void);

/* Every region to the disabled class, its gen moved on (its calls still
 * open will not write their end): mode.c's regions_freeze. */
void sp_region_types_freeze(void);

/* keep 1 (finalize(), before the events go): each region's num_calls goes
 * on reading the calls the session recorded, until keep 0 (the next
 * session, _reset()) forgets them. */
void sp_regions_keep_counts(int keep);

/* region(name, functions=None), get_region(name), _profile_recursive,
 * _coroutine_enter, _coroutine_exit. */
extern PyMethodDef sp_region_types_methods[];

/* The classes made ready (module init); -1 with an exception. */
int sp_region_types_init(void);

#endif
