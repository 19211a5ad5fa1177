/*-------------------------------------------------------------------------
 *
 * plans.h
 *	  SPI plans of the extension's own SQL, prepared once per backend
 *	  (plans.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PLANS_H
#define ORDERING_PLANS_H

#include "executor/spi.h"

extern SPIPlanPtr ordering_prepare_once(SPIPlanPtr *cache, const char *sql,
										int nargs, Oid *argtypes,
										int cursor_options);

#endif							/* ORDERING_PLANS_H */
