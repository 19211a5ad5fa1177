/*-------------------------------------------------------------------------
 *
 * ordering.c
 *	  Module entry point: _PG_init, which defines the settings and installs
 *	  what the library needs at load time.
 *
 * The SQL API works whether or not the library is preloaded.  Preloading
 * (shared_preload_libraries = 'ordering') additionally reserves shared
 * memory for statistics and registers the gap-sweeper background worker.
 *
 * Layer: the top.  This file includes the headers of the files whose
 * load-time setup it calls, and no file includes its header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

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
	provisional_init();
	held_init();
	ordering_stats_init();
	if (ordering_preloaded)
		ordering_worker_register();
}
