/* sp_charts.h - the read API's charts and region filter, from the report
 * layer (charts.c). Include <Python.h> first. */
#ifndef SP_CHARTS_H
#define SP_CHARTS_H

/* _select_names, _chart_gantt, _chart_flame, _chart_table, _chart_sizes and
 * _charts_code (the frozen scope_profiler._charts), for the module's table. */
extern PyMethodDef sp_charts_methods[];

#endif
