/*-------------------------------------------------------------------------
 *
 * provisional.h
 *	  Numbers handed to rows that may not be stored.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PROVISIONAL_H
#define ORDERING_PROVISIONAL_H

extern void provisional_init(void);
extern void provisional_record(text *stream, text *resource, int64 seq);
extern text *provisional_stored(text *stream, int64 seq);
extern void provisional_settle_level(void);

#endif							/* ORDERING_PROVISIONAL_H */
