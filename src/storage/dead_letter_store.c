/*-------------------------------------------------------------------------
 *
 * dead_letter_store.c
 *	  The rows of the dead letters: the dead letter of a (consumer,
 *	  resource), read, put and removed (README.md, "Dead letters").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "dead_letter_store.h"

/*
 * The dead letter of a key, as the snapshot sees it; false if there is
 * none.  The payload is copied into the current memory context.  Each
 * function here takes the table of the dead letters: InvalidOid for
 * ordering.dead_letter_events, else a distributed consumer's shard.
 */
bool
dead_letter_fetch(Oid dead_letters, const Datum *key, Snapshot snapshot,
				  DeadLetter *dead, OwnedRow *row)
{
	OwnedRel	rel;
	bool		found;

	owned_open_as(OWNED_DEAD_LETTERS, dead_letters, RowExclusiveLock, &rel);
	found = owned_fetch(&rel, key, snapshot, row);
	if (found)
	{
		dead->seq = DatumGetInt64(row->values[DEAD_SEQ - 1]);
		dead->isnull = row->nulls[DEAD_PAYLOAD - 1];
		dead->payload = dead->isnull ? (Datum) 0 :
			PointerGetDatum(PG_DETOAST_DATUM_COPY(row->values[DEAD_PAYLOAD - 1]));
	}
	owned_close(&rel);
	return found;
}

/*
 * A cstring as a text datum, or a null one.
 */
static void
text_or_null(const char *s, Datum *value, bool *isnull)
{
	*isnull = s == NULL;
	*value = s == NULL ? (Datum) 0 : CStringGetTextDatum(s);
}

/*
 * Make an event the dead letter of its key, with its error (sqlstate NULL
 * for a reason given by dead_letter()).  The caller has blocked the key at
 * its seq.  The same event dead again counts an attempt; a dead letter of a
 * higher seq is parked again (README.md).
 */
void
dead_letter_put(Oid dead_letters, OwnedRel *parked, const Datum *key,
				const ReadyEvent *event, const char *sqlstate,
				const char *message, const char *detail)
{
	OwnedRel	rel;
	OwnedRow	row;
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS] = {false};

	owned_open_as(OWNED_DEAD_LETTERS, dead_letters, RowExclusiveLock, &rel);
	if (owned_fetch(&rel, key, SnapshotSelf, &row))
	{
		int64		seq = DatumGetInt64(row.values[DEAD_SEQ - 1]);

		if (seq == event->seq)
		{
			memcpy(values, row.values, sizeof(values));
			memcpy(nulls, row.nulls, sizeof(nulls));
			text_or_null(sqlstate, &values[DEAD_SQLSTATE - 1], &nulls[DEAD_SQLSTATE - 1]);
			text_or_null(message, &values[DEAD_MESSAGE - 1], &nulls[DEAD_MESSAGE - 1]);
			text_or_null(detail, &values[DEAD_DETAIL - 1], &nulls[DEAD_DETAIL - 1]);
			values[DEAD_FAILED_AT - 1] =
				TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
			values[DEAD_ATTEMPTS - 1] =
				Int32GetDatum(DatumGetInt32(row.values[DEAD_ATTEMPTS - 1]) + 1);
			owned_update(&rel, &row, values, nulls);
			owned_close(&rel);
			return;
		}
		if (seq < event->seq)
			elog(ERROR, "a dead letter below the new one of the same key");
		parked_insert(parked, key, seq, row.values[DEAD_PAYLOAD - 1],
					  row.nulls[DEAD_PAYLOAD - 1]);
		owned_delete(&rel, &row.tid);
	}
	values[DEAD_CONSUMER - 1] = key[0];
	values[DEAD_RESOURCE - 1] = key[1];
	values[DEAD_SEQ - 1] = Int64GetDatum(event->seq);
	values[DEAD_PAYLOAD - 1] = event->payload;
	nulls[DEAD_PAYLOAD - 1] = event->isnull;
	text_or_null(sqlstate, &values[DEAD_SQLSTATE - 1], &nulls[DEAD_SQLSTATE - 1]);
	text_or_null(message, &values[DEAD_MESSAGE - 1], &nulls[DEAD_MESSAGE - 1]);
	text_or_null(detail, &values[DEAD_DETAIL - 1], &nulls[DEAD_DETAIL - 1]);
	values[DEAD_FAILED_AT - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[DEAD_ATTEMPTS - 1] = Int32GetDatum(1);
	owned_insert(&rel, values, nulls);
	owned_close(&rel);
}

/*
 * Remove the dead letter of a key (the block was lifted).
 */
void
dead_letter_remove(Oid dead_letters, const Datum *key)
{
	OwnedRel	rel;
	OwnedRow	row;

	owned_open_as(OWNED_DEAD_LETTERS, dead_letters, RowExclusiveLock, &rel);
	if (owned_fetch(&rel, key, SnapshotSelf, &row))
		owned_delete(&rel, &row.tid);
	owned_close(&rel);
}
