/*-------------------------------------------------------------------------
 *
 * ordering.c
 *	  The module entry point: _PG_init defines the settings and installs
 *	  what the library needs at load time.  Preloading
 *	  (shared_preload_libraries) adds the statistics' shared memory and the
 *	  gap sweeper's background workers; the SQL API works without it.
 *	  src/README.md describes the folders below.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "citus.h"
#include "gaps.h"
#include "ordering.h"
#include "producer.h"
#include "settings.h"
#include "stats.h"

PG_MODULE_MAGIC;

/* True when loaded through shared_preload_libraries */
static bool ordering_preloaded = false;

/*
 * Module load callback.
 */
void
_PG_init(void)
{
	ordering_preloaded = process_shared_preload_libraries_in_progress;

	ordering_define_settings();
	ordering_standbys_define_settings();
	MarkGUCPrefixReserved("ordering");
	statement_init();
	citus_grants_init();
	citus_splits_init();
	provisional_init();
	held_init();
	ordering_stats_init();
	if (ordering_preloaded)
		ordering_worker_register();
}
