/*-------------------------------------------------------------------------
 *
 * attached.c
 *	  Is the relation a sequencing trigger fires on really attached?
 *
 * ordering.attach() registers a table in ordering.attachments and creates
 * three triggers on it: the sequencing trigger (BEFORE INSERT), its
 * companion that tells provisional.c which rows were stored (AFTER INSERT,
 * whose WHEN clause does the work) and the guard (BEFORE UPDATE OR DELETE)
 * that keeps a sequenced row's number and resource and recognizes a row
 * moving between partitions.  On a partitioned table PostgreSQL clones all
 * three to every partition.
 *
 * The trigger refuses to sequence a row when that picture does not hold:
 *
 *	- the relation, or the partitioned table it is a partition of, is not
 *	  registered as attached with this trigger's stream: a trigger copied by
 *	  hand or by a tool (Citus creates the triggers of a distributed table
 *	  on its shards, each of which would count on its own node), or a
 *	  partition detached with its trigger (SQLSTATE 0A000);
 *	- a companion is missing or not enabled like the sequencing trigger
 *	  (ALTER TABLE ... DISABLE TRIGGER of one of them): without it numbers of
 *	  stored rows would be given back (SQLSTATE 55000).
 *
 * The verdict is cached per relation and forgotten when the relation's
 * relcache entry is invalidated, which attaching, detaching, creating or
 * dropping a trigger, attaching or detaching a partition, and turning the
 * relay wake-up on or off (wakeup.c) all do.  With the verdict goes the
 * table's wake-up option, read from the same registry row, so that the
 * trigger learns it with one boolean test per row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "attached.h"
#include "ordering.h"
#include "owned.h"

/* A relation found attached (its trigger's stream cannot change without
 * invalidating its relcache entry) */
typedef struct AttachedEntry
{
	Oid			relid;			/* hash key */
	bool		wake_relays;	/* its registry row's wake-up option */
} AttachedEntry;

static HTAB *attached_cache = NULL;

/*
 * Forget the verdict on a relation whose relcache entry is invalidated (or
 * on all of them).
 */
static void
attached_relcache_callback(Datum arg, Oid relid)
{
	if (attached_cache == NULL)
		return;
	if (relid == InvalidOid)
	{
		HASH_SEQ_STATUS status;
		AttachedEntry *entry;

		hash_seq_init(&status, attached_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
			(void) hash_search(attached_cache, &entry->relid, HASH_REMOVE, NULL);
	}
	else
		(void) hash_search(attached_cache, &relid, HASH_REMOVE, NULL);
}

/*
 * The OID of a function of ours taking no arguments, or InvalidOid.
 */
static Oid
our_function(const char *name)
{
	List	   *names = list_make1(makeString("ordering"));

	names = lappend(names, makeString((char *) name));
	return LookupFuncName(names, 0, NULL, true);
}

/*
 * Are the companions of the sequencing trigger there, and enabled like it?
 */
static void
check_companions(Relation rel, Trigger *trigger)
{
	Oid			stored = our_function("sequence_stored_trigger");
	Oid			guard = our_function("sequence_guard");
	bool		has_stored = false;
	bool		has_guard = false;

	for (int i = 0; i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (t->tgenabled != trigger->tgenabled)
			continue;
		has_stored = has_stored || t->tgfoid == stored;
		has_guard = has_guard || t->tgfoid == guard;
	}
	if (!has_stored || !has_guard)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is attached incompletely: a trigger that ordering.attach() created is missing or disabled",
						RelationGetRelationName(rel)),
				 errhint("Enable or disable the three ordering triggers together, or call ordering.detach() and ordering.attach() again.")));
}

/*
 * The stream the registry has for the relation or its partitioned
 * ancestors, the nearest first, and that row's wake-up option; NULL if none
 * is attached.  Read through the storage layer, so that whoever inserts
 * into an attached table needs no privilege on ordering.attachments.
 */
static char *
registered_stream(Relation rel, bool *wake_relays)
{
	List	   *ancestors = get_partition_ancestors(RelationGetRelid(rel));
	char	   *stream = NULL;
	OwnedRel	attachments;
	ListCell   *lc;

	ancestors = lcons_oid(RelationGetRelid(rel), ancestors);
	owned_open(OWNED_ATTACHMENTS, AccessShareLock, &attachments);
	foreach(lc, ancestors)
	{
		Datum		key[1] = {ObjectIdGetDatum(lfirst_oid(lc))};
		OwnedRow	row;

		if (owned_fetch(&attachments, key, SnapshotSelf, &row) &&
			DatumGetBool(row.values[ATTACHMENTS_ATTACHED - 1]))
		{
			stream = TextDatumGetCString(row.values[ATTACHMENTS_STREAM - 1]);
			*wake_relays = DatumGetBool(row.values[ATTACHMENTS_WAKE_RELAYS - 1]);
			break;
		}
	}
	owned_close(&attachments);
	return stream;
}

/*
 * Refuse to sequence rows of "rel" with this trigger and stream unless the
 * relation is attached (file header).  Returns the relation's wake-up
 * option (wakeup.c).
 */
bool
attached_check(Relation rel, Trigger *trigger, text *stream_text)
{
	Oid			relid = RelationGetRelid(rel);
	AttachedEntry *entry;
	char	   *stream;
	char	   *registered;
	bool		wake_relays = false;

	if (attached_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AttachedEntry);
		attached_cache = hash_create("ordering attached relations", 64, &ctl,
									 HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(attached_relcache_callback, (Datum) 0);
	}
	entry = hash_search(attached_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->wake_relays;

	/* a 1.0 database has neither the companions nor the registry */
	owned_check_version();
	check_companions(rel, trigger);
	stream = text_to_cstring(stream_text);
	registered = registered_stream(rel, &wake_relays);
	if (registered == NULL || strcmp(registered, stream) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("relation \"%s\" is not attached to stream \"%s\"",
						RelationGetRelationName(rel), stream),
				 errdetail("Only a table attached with ordering.attach(), or a partition of one, is sequenced; a copy of its trigger elsewhere (a shard of a distributed table, say) would count numbers of its own."),
				 errhint("Call ordering.attach() on the table.")));

	entry = hash_search(attached_cache, &relid, HASH_ENTER, NULL);
	entry->wake_relays = wake_relays;
	pfree(registered);
	pfree(stream);
	return wake_relays;
}
