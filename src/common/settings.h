/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The ordering.* settings (GUCs) that more than one file reads; defined
 *	  in settings.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_SETTINGS_H
#define ORDERING_SETTINGS_H

extern int	ordering_gap_deadline;	/* seconds */
extern int	ordering_sweep_interval;	/* seconds */
extern char *ordering_sweep_databases;
extern int	ordering_max_parked_per_resource;
extern int	ordering_max_consumers;
extern int	ordering_max_streams;
extern int	ordering_hot_sketches;
extern int	ordering_hot_size;
extern char *ordering_sweep_role;

/* True while a restore runs: ordering.pre_restore() .. post_restore() */
extern bool ordering_restoring;

/* ordering.log_decisions: consumer decisions go to the server log */
extern bool ordering_log_decisions;

/* Define the ordering.* settings; called first by _PG_init */
extern void ordering_define_settings(void);

#endif							/* ORDERING_SETTINGS_H */
