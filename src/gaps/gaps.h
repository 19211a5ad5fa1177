/*-------------------------------------------------------------------------
 *
 * gaps.h
 *	  Gap detection and the sweep (gaps.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_GAPS_H
#define ORDERING_GAPS_H

/*
 * Is this database being restored: ordering.restoring, or the database's
 * own setting (a long-lived connection predates it)?  Needs SPI.
 */
extern bool ordering_database_restoring(void);

#endif							/* ORDERING_GAPS_H */
