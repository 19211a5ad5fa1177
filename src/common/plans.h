/*-------------------------------------------------------------------------
 *
 * plans.h
 *	  SPI plans of the extension's own SQL, prepared once per backend,
 *	  and the rows they return handed on (plans.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PLANS_H
#define ORDERING_PLANS_H

#include "executor/spi.h"
#include "nodes/execnodes.h"

extern SPIPlanPtr ordering_prepare_once(SPIPlanPtr *cache, const char *sql,
										int nargs, Oid *argtypes,
										int cursor_options);
extern void ordering_spi_put_rows(ReturnSetInfo *rsinfo);

#endif							/* ORDERING_PLANS_H */
