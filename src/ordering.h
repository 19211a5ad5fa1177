/*-------------------------------------------------------------------------
 *
 * ordering.h
 *	  The module entry point (ordering.c).
 *
 * Only ordering.c includes this header: what the other files share is
 * declared in the header of their folder (src/README.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_H
#define ORDERING_H

/* Module load callback: defines the settings, installs the hooks */
extern PGDLLEXPORT void _PG_init(void);

#endif							/* ORDERING_H */
