/*-------------------------------------------------------------------------
 *
 * standbys.h
 *	  Failover-safe publishing: ordering.wait_for_standbys() and its
 *	  setting.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STANDBYS_H
#define ORDERING_STANDBYS_H

/* ordering.min_standbys: how many standbys must have the WAL (standbys.c) */
extern int	ordering_min_standbys;

extern void ordering_standbys_define_settings(void);

#endif							/* ORDERING_STANDBYS_H */
