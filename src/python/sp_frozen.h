/* sp_frozen.h - the module's frozen Python submodules (frozen.c):
 * _frozen_code(name), for the module's table. Include <Python.h> first. */
#ifndef SP_FROZEN_H
#define SP_FROZEN_H

extern PyMethodDef sp_frozen_methods[];

#endif
