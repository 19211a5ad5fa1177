/*-------------------------------------------------------------------------
 *
 * ordering.h
 *	  Declarations shared by the files of the ordering extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_H
#define ORDERING_H

/* Settings (GUCs), defined in ordering.c */
extern int	ordering_gap_deadline;	/* seconds */
extern int	ordering_sweep_interval;	/* seconds */
extern char *ordering_sweep_databases;
extern int	ordering_max_parked_per_resource;

/* True when loaded through shared_preload_libraries */
extern bool ordering_preloaded;

#endif							/* ORDERING_H */
