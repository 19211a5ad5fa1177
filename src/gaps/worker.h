/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The gap-sweeper background workers (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_WORKER_H
#define ORDERING_WORKER_H

/* Registers the background worker launcher; called from _PG_init */
extern void ordering_worker_register(void);

#endif							/* ORDERING_WORKER_H */
