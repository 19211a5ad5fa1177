/*-------------------------------------------------------------------------
 *
 * keyed.h
 *	  Direct access to the (text, text) -> bigint tables of the extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_KEYED_H
#define ORDERING_KEYED_H

/*
 * One table of the shape (key1 text, key2 text, value bigint) with a primary
 * key on (key1, key2): ordering.sequences and ordering.positions.
 */
typedef struct KeyedTable
{
	const char *relname;		/* table name in schema "ordering" */
	uint16		lockclass;		/* tells its key locks from other tables' */
	Oid			relid;			/* cached; InvalidOid until looked up */
	Oid			indexid;		/* its primary key */
} KeyedTable;

/*
 * The longest key, in bytes, we accept.  Two of them and a bigint always fit
 * a btree entry of our tables (at most about 2.7 kB), and an over-long key
 * is refused as a bad value instead of by the btree with SQLSTATE 54000,
 * which the contract gives to "parked cap reached, redeliver later".
 */
#define KEYED_MAX_KEY_BYTES 1024

/*
 * Refuse a key longer than KEYED_MAX_KEY_BYTES; "what" names it.
 */
static inline void
keyed_check_key_length(text *key, const char *what)
{
	if (VARSIZE_ANY_EXHDR(key) > KEYED_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too long (%zu bytes, at most %d)", what,
						(size_t) VARSIZE_ANY_EXHDR(key), KEYED_MAX_KEY_BYTES)));
}

extern KeyedTable ordering_sequences;
extern KeyedTable ordering_positions;

/*
 * Computes the value a row should get from the value it has (0 and exists =
 * false for a row not created yet).  Returning "current" means: no change.
 * It may be called more than once per advance, with newer values, when a
 * concurrent transaction advanced the row meanwhile; it must not raise.
 */
typedef int64 (*KeyedDecide) (int64 current, bool exists, void *arg);

extern int64 keyed_advance(KeyedTable *kt, text *key1, text *key2,
						   KeyedDecide decide, void *arg, int64 *previous);
extern int64 keyed_read(KeyedTable *kt, text *key1, text *key2);
extern void keyed_lock_key(KeyedTable *kt, text *key1, text *key2);

#endif							/* ORDERING_KEYED_H */
