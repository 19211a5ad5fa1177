/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The ordering.* settings (GUCs) that more than one file reads: their
 *	  variables and their definitions.  _PG_init defines them first; the
 *	  standby settings are standbys.c's own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "settings.h"

int			ordering_gap_deadline = 300;
int			ordering_sweep_interval = 60;
char	   *ordering_sweep_databases = NULL;
int			ordering_max_parked_per_resource = 10000;
int			ordering_max_consumers = 1000;
int			ordering_max_streams = 1000;
int			ordering_hot_sketches = 128;
int			ordering_hot_size = 32;
char	   *ordering_sweep_role = NULL;
bool		ordering_restoring = false;
bool		ordering_log_decisions = false;

/*
 * Define the ordering.* settings.
 */
void
ordering_define_settings(void)
{
	DefineCustomIntVariable("ordering.gap_deadline",
							gettext_noop("How long the oldest parked event of a resource may wait before its gap is escalated."),
							NULL,
							&ordering_gap_deadline,
							300, 1, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("ordering.sweep_interval",
							gettext_noop("Time between two gap sweeps of the background worker."),
							NULL,
							&ordering_sweep_interval,
							60, 1, INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("ordering.sweep_databases",
							   gettext_noop("Comma-separated list of databases the background worker sweeps for gaps."),
							   NULL,
							   &ordering_sweep_databases,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("ordering.max_parked_per_resource",
							gettext_noop("Most events that may be parked for one (consumer, resource)."),
							gettext_noop("One more is refused with SQLSTATE 54000 and nothing is stored."),
							&ordering_max_parked_per_resource,
							10000, 1, INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("ordering.restoring",
							 gettext_noop("Whether a restore is loading this database: sequenced rows keep the numbers they carry and no new numbers are assigned."),
							 gettext_noop("Set for the new database with ALTER DATABASE ... SET before a full restore, or by ordering.pre_restore() before a data-only one; ordering.post_restore() resets it."),
							 &ordering_restoring,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("ordering.sweep_role",
							   gettext_noop("Role the background worker sweeps as; empty means the bootstrap superuser."),
							   NULL,
							   &ordering_sweep_role,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	/*
	 * Superuser only: the lines name consumers and resources, and go to the
	 * server log.
	 */
	DefineCustomBoolVariable("ordering.log_decisions",
							 gettext_noop("Writes each consumer decision to the server log as a line of JSON."),
							 gettext_noop("Consumer, resource, expected and received sequence number and the result; never the payload."),
							 &ordering_log_decisions,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Sizes of the shared statistics: they exist only when preloaded, and
	 * PGC_POSTMASTER settings can only be defined then.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomIntVariable("ordering.max_consumers",
								gettext_noop("Most consumers (of all databases) the shared statistics keep."),
								gettext_noop("Counts of further consumers are lost until ordering.stats_reset()."),
								&ordering_max_consumers,
								1000, 10, 100000,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);

		DefineCustomIntVariable("ordering.max_streams",
								gettext_noop("Most streams (of all databases) the shared statistics keep."),
								gettext_noop("Counts of further streams are lost until ordering.stats_reset()."),
								&ordering_max_streams,
								1000, 10, 100000,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);

		DefineCustomIntVariable("ordering.hot_resources_sketches",
								gettext_noop("Streams and consumers (of all databases) whose busiest resources the shared statistics track."),
								gettext_noop("Each has a sketch of ordering.hot_resources_size counters; 0 turns ordering.hot_resources() off."),
								&ordering_hot_sketches,
								128, 0, 100000,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);

		DefineCustomIntVariable("ordering.hot_resources_size",
								gettext_noop("Counters of each hot-resources sketch."),
								gettext_noop("A resource's count overcounts by at most the events of its stream or consumer divided by this."),
								&ordering_hot_size,
								32, 4, 10000,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);
	}
}
