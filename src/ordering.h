/*-------------------------------------------------------------------------
 *
 * ordering.h
 *	  Declarations shared by the files of the ordering extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_H
#define ORDERING_H

#include "executor/spi.h"
#include "utils/relcache.h"

#include "compat.h"

/* Settings (GUCs), defined in ordering.c */
extern int	ordering_gap_deadline;	/* seconds */
extern int	ordering_sweep_interval;	/* seconds */
extern char *ordering_sweep_databases;
extern int	ordering_max_parked_per_resource;
extern int	ordering_max_consumers;
extern int	ordering_max_streams;
extern int	ordering_hot_sketches;
extern int	ordering_hot_size;
extern char *ordering_sweep_role;

/* True when loaded through shared_preload_libraries */
extern bool ordering_preloaded;

/* Registers the background worker launcher; worker.c */
extern void ordering_worker_register(void);

/* True while a restore runs: ordering.pre_restore() .. post_restore() */
extern bool ordering_restoring;

/* SPI plans of the extension's own SQL, in plans.c */
extern SPIPlanPtr ordering_prepare_once(SPIPlanPtr *cache, const char *sql,
										int nargs, Oid *argtypes,
										int cursor_options);

/*
 * Do two texts hold the same bytes (whatever the form of their headers)?
 */
static inline bool
ordering_text_equal(const text *a, const text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

#endif							/* ORDERING_H */
