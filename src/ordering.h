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
extern char *ordering_sweep_role;

/* True when loaded through shared_preload_libraries */
extern bool ordering_preloaded;

/* Registers the background worker launcher; worker.c */
extern void ordering_worker_register(void);

/* The extension's own relations, in catalog.c */
extern Oid	ordering_relation_oid(const char *relname);
ORDERING_NORETURN extern void ordering_relation_altered(const char *relname);
extern Oid	ordering_primary_key_on_leading(Relation rel, int nkeys);

/* SPI plans of the extension's own SQL, in plans.c */
extern SPIPlanPtr ordering_prepare_once(SPIPlanPtr *cache, const char *sql,
										int nargs, Oid *argtypes,
										int cursor_options);

#endif							/* ORDERING_H */
