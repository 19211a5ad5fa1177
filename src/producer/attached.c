/*-------------------------------------------------------------------------
 *
 * attached.c
 *	  The verdict on the table a sequencing trigger fires on: registered as
 *	  attached with this trigger's stream, its companions in place, and where
 *	  it counts (README.md, "Attached tables").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_subscription_rel.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/syscache.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "citus.h"
#include "owned.h"
#include "producer.h"
#include "text_equal.h"

PG_FUNCTION_INFO_V1(ordering_sequencing_trigger);

/* A relation found attached (its trigger's stream cannot change without
 * invalidating its relcache entry) */
typedef struct AttachedEntry
{
	Oid			relid;			/* hash key */
	Oid			tgoid;			/* the sequencing trigger checked */
	AttachedTable table;
	Oid			depends[2];		/* a shard's distributed table and counter
								 * table (citus_counters.c), or InvalidOid */
} AttachedEntry;

static HTAB *attached_cache = NULL;

/* How many entries depend on other relations (depends[] set) */
static int	attached_dependents = 0;

/*
 * Remove an entry of the cache.
 */
static void
attached_forget(AttachedEntry *entry)
{
	if (OidIsValid(entry->depends[0]))
		attached_dependents--;
	(void) hash_search(attached_cache, &entry->relid, HASH_REMOVE, NULL);
}

/* The OIDs of our trigger functions, InvalidOid while not looked up */
static Oid	sequence_trigger_fn = InvalidOid;
static Oid	sequence_stored_fn = InvalidOid;
static Oid	sequence_guard_fn = InvalidOid;
static bool trigger_fns_known = false;

/*
 * Forget the verdict on a relation whose relcache entry is invalidated (or
 * on all of them).
 */
static void
attached_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AttachedEntry *entry;

	if (attached_cache == NULL)
		return;
	if (relid == InvalidOid || attached_dependents > 0)
	{
		hash_seq_init(&status, attached_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
			if (relid == InvalidOid || entry->relid == relid ||
				entry->depends[0] == relid || entry->depends[1] == relid)
				attached_forget(entry);
	}
	else if ((entry = hash_search(attached_cache, &relid, HASH_FIND, NULL)) != NULL)
		attached_forget(entry);
}

/*
 * Forget every verdict: the tables that subscriptions write changed
 * (pg_subscription_rel), which no relcache invalidation says.
 */
static void
subscription_rel_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	attached_relcache_callback(arg, InvalidOid);
}

/*
 * Forget the OIDs of our trigger functions: pg_proc changed (the extension
 * may have been dropped or created again).
 */
static void
trigger_fns_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	trigger_fns_known = false;
}

/*
 * The OID of a function of ours taking no arguments, in schema "nsp", or
 * InvalidOid.
 */
static Oid
our_function(const char *nsp, const char *name)
{
	List	   *names = list_make1(makeString((char *) nsp));

	names = lappend(names, makeString((char *) name));
	return LookupFuncName(names, 0, NULL, true);
}

/*
 * Look up the OIDs of the sequencing trigger's function and its companion's
 * (InvalidOid where the extension is not installed).
 */
static void
lookup_trigger_fns(void)
{
	static bool callback_registered = false;

	if (trigger_fns_known)
		return;
	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, trigger_fns_callback, (Datum) 0);
		callback_registered = true;
	}
	sequence_trigger_fn = our_function("ordering", "sequence_trigger");
	sequence_stored_fn = our_function("ordering_internal", "sequence_stored_trigger");
	sequence_guard_fn = our_function("ordering_internal", "sequence_guard");
	trigger_fns_known = true;
}

/*
 * Does a BEFORE INSERT row trigger that is not disabled fire after the
 * trigger at "index"?  Row triggers fire in the order of the array (by
 * name).  Only such a trigger can suppress a row after ours numbered it.
 */
static bool
later_before_insert_trigger(TriggerDesc *trigdesc, int index)
{
	for (int i = index + 1; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_ROW,
								 TRIGGER_TYPE_BEFORE, TRIGGER_TYPE_INSERT) &&
			t->tgenabled != TRIGGER_DISABLED)
			return true;
	}
	return false;
}

/*
 * The index of a trigger in a trigger descriptor, by its OID, or -1.
 */
static int
trigger_index(TriggerDesc *trigdesc, Oid tgoid)
{
	for (int i = 0; i < trigdesc->numtriggers; i++)
		if (trigdesc->triggers[i].tgoid == tgoid)
			return i;
	return -1;
}

/*
 * Refuse a relation whose triggers attach() created are not all enabled
 * alike: one of them missing, or disabled while another fires.
 */
static void
refuse_incomplete_named(const char *relname)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"%s\" is attached incompletely: a trigger that ordering.attach() created is missing or disabled",
					relname),
			 errhint("Enable or disable the three ordering triggers together, or call ordering.detach() and ordering.attach() again.")));
}

static void
refuse_incomplete(Relation rel)
{
	refuse_incomplete_named(RelationGetRelationName(rel));
}

/*
 * Are the companions of the sequencing trigger there, and enabled like it?
 */
static void
check_companions(Relation rel, Trigger *trigger)
{
	bool		has_stored = false;
	bool		has_guard = false;

	lookup_trigger_fns();
	for (int i = 0; i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (t->tgenabled != trigger->tgenabled)
			continue;
		has_stored = has_stored || t->tgfoid == sequence_stored_fn;
		has_guard = has_guard || t->tgfoid == sequence_guard_fn;
	}
	if (!has_stored || !has_guard)
		refuse_incomplete(rel);
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
 * A test of the catalog rows of one OID, which it reads from "scan", with
 * the argument its caller gave (catalog_first_of())
 */
typedef bool (*CatalogRowsTest) (SysScanDesc scan, void *arg);

/*
 * The first of "oids" whose rows in catalog "catalog_id" (those whose
 * "attno" equals it) pass "test", or InvalidOid.  "index_id" is an index
 * of the catalog that leads with "attno".
 */
static Oid
catalog_first_of(Oid catalog_id, Oid index_id, AttrNumber attno, List *oids,
				 CatalogRowsTest test, void *arg)
{
	Relation	catalog = table_open(catalog_id, AccessShareLock);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, oids)
	{
		ScanKeyData key;
		SysScanDesc scan;
		bool		passed;

		ScanKeyInit(&key, attno, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(lfirst_oid(lc)));
		scan = systable_beginscan(catalog, index_id, true, NULL, 1, &key);
		passed = test(scan, arg);
		systable_endscan(scan);
		if (passed)
		{
			found = lfirst_oid(lc);
			break;
		}
	}
	table_close(catalog, AccessShareLock);
	return found;
}

/* A test of one catalog row (catalog_row_of_any()) */
typedef bool (*CatalogRowTest) (HeapTuple tuple);

/*
 * Does a row read from "scan" pass the CatalogRowTest "arg" points to (NULL:
 * any row)?
 */
static bool
some_row_passes(SysScanDesc scan, void *arg)
{
	CatalogRowTest test = *(CatalogRowTest *) arg;
	HeapTuple	tuple;

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		if (test == NULL || test(tuple))
			return true;
	return false;
}

/*
 * Has catalog "catalog_id" a row, passing "test" (NULL: any row), whose
 * "attno" equals one of "oids"?  "index_id" is an index of the catalog
 * that leads with "attno".
 */
static bool
catalog_row_of_any(Oid catalog_id, Oid index_id, AttrNumber attno,
				   List *oids, CatalogRowTest test)
{
	return OidIsValid(catalog_first_of(catalog_id, index_id, attno, oids,
									   some_row_passes, &test));
}

/*
 * Does a logical replication subscription write "rel" or one of its
 * partitioned ancestors (pg_subscription_rel)?
 */
static bool
subscribed(Relation rel)
{
	List	   *rels = lcons_oid(RelationGetRelid(rel),
								 get_partition_ancestors(RelationGetRelid(rel)));
	bool		found;

	found = catalog_row_of_any(SubscriptionRelRelationId,
							   SubscriptionRelSrrelidSrsubidIndexId,
							   Anum_pg_subscription_rel_srrelid, rels, NULL);
	list_free(rels);
	return found;
}

/*
 * Refuse a local insert into a table that a subscription writes, when our
 * triggers do not fire for the rows it applies (they fire on origin only,
 * as attach() makes them): its counters would stay behind the numbers
 * applied, and a local row would repeat one.  Enabled ALWAYS, they fire in
 * the apply too, which keeps the counters at the highest number applied
 * (sequencing.c), so local producers continue after it
 * (docs/replicas.md, "Logical replication").
 */
static void
check_subscribed(Relation rel, Trigger *trigger)
{
	if (trigger->tgenabled != TRIGGER_FIRES_ON_ORIGIN || !subscribed(rel))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"%s\" is written by a logical replication subscription that its sequencing trigger does not see",
					RelationGetRelationName(rel)),
			 errdetail("The trigger fires for local inserts only, so the counters stay behind the numbers the subscription applies, and a local insert would repeat one."),
			 errhint("Enable the three ordering triggers with ALTER TABLE ... ENABLE ALWAYS TRIGGER: the counters then follow the rows the subscription applies.")));
}

/*
 * Refuse to sequence rows of "rel" with this trigger and stream unless the
 * relation is attached (README.md).  Tells the caller the relation's
 * wake-up option (wakeup.c) and whether a later BEFORE trigger may suppress
 * its rows.
 */
void
attached_check(Relation rel, Trigger *trigger, text *stream_text,
			   AttachedTable *table)
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
		CacheRegisterSyscacheCallback(SUBSCRIPTIONRELMAP,
									  subscription_rel_callback, (Datum) 0);
	}
	entry = hash_search(attached_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL && entry->tgoid == trigger->tgoid)
	{
		*table = entry->table;
		return;
	}
	if (entry != NULL)
		attached_forget(entry);

	/* a 1.0 database has neither the companions nor the registry */
	owned_check_version();
	if (trigger->tgnargs == 4)
	{
		/* a shard of a distributed stream (README.md) */
		Oid			logical;
		Oid			counters;
		int32		hash_min;
		int32		hash_max;
		Oid			shard = citus_counter_shard(rel, trigger, &logical,
												&counters, &hash_min,
												&hash_max);

		check_companions(rel, trigger);

		entry = hash_search(attached_cache, &relid, HASH_ENTER, NULL);
		entry->table.counters = shard;
		entry->table.hash_min = hash_min;
		entry->table.hash_max = hash_max;
		entry->depends[0] = logical;
		entry->depends[1] = counters;
		attached_dependents++;
	}
	else
	{
		stream = text_to_cstring(stream_text);
		registered = registered_stream(rel, &wake_relays);
		if (registered == NULL || strcmp(registered, stream) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("relation \"%s\" is not attached to stream \"%s\"",
							RelationGetRelationName(rel), stream),
					 errdetail("Only a table attached with ordering.attach(), or a partition of one, is sequenced; a copy of its trigger elsewhere (a shard of a distributed table, say) would count numbers of its own."),
					 registered == NULL ?
					 errhint("After a restore, call ordering.post_restore(): it registers the tables whose triggers were restored.  Otherwise call ordering.detach() and ordering.attach() on the table.") :
					 errhint("Call ordering.detach() and ordering.attach() on the table.")));
		/* only a table attach() registered can be attached incompletely */
		check_companions(rel, trigger);
		check_subscribed(rel, trigger);
		pfree(registered);
		pfree(stream);
		entry = hash_search(attached_cache, &relid, HASH_ENTER, NULL);
		entry->table.counters = InvalidOid;
		entry->depends[0] = entry->depends[1] = InvalidOid;
	}
	entry->tgoid = trigger->tgoid;
	entry->table.wake_relays = wake_relays;
	entry->table.later_trigger =
		later_before_insert_trigger(rel->trigdesc,
									trigger_index(rel->trigdesc, trigger->tgoid));
	*table = entry->table;
}

/*
 * Refuse a row that the counters of its table do not count: on a shard of a
 * distributed table, whose counters are a counter shard, its resource (its
 * value, keyed "resource") must hash into the shard's range
 * (citus_counters.c).
 */
void
attached_check_resource(Relation rel, const AttachedTable *table,
						AttrNumber resattno, Datum value, text *resource)
{
	if (OidIsValid(table->counters))
		citus_check_shard_range(rel, table->hash_min, table->hash_max,
								resattno, value, resource);
}

/*
 * A statement that cannot skip a row by ON CONFLICT is about to run
 * (provisional.c): in its own copies of its result relations' triggers
 * (InitResultRelInfo() copies them for each statement), turn off the
 * companion of every sequencing trigger that no BEFORE INSERT trigger
 * follows.  The sequencing trigger then records no provisional number for
 * those rows (attached_check() computes the same answer from the same
 * triggers, which cannot change while the statement holds its lock), so the
 * companion would have nothing to do: its WHEN clause returns false in any
 * case, so no event is lost, and the statement saves the cost of preparing
 * that clause.  Nothing else reads the copy; the relation's own triggers
 * are untouched.  Result relations that partition routing opens later
 * keep their companion, which then finds nothing to settle.
 */
void
attached_skip_companions(EState *estate)
{
	ListCell   *lc;

	foreach(lc, estate->es_opened_result_relations)
	{
		ResultRelInfo *rri = lfirst(lc);
		TriggerDesc *trigdesc = rri->ri_TrigDesc;
		int			seq = -1;

		if (trigdesc == NULL || !trigdesc->trig_insert_after_row ||
			!trigdesc->trig_insert_before_row)
			continue;
		lookup_trigger_fns();
		if (!OidIsValid(sequence_trigger_fn))
			return;
		for (int i = 0; i < trigdesc->numtriggers && seq < 0; i++)
			if (trigdesc->triggers[i].tgfoid == sequence_trigger_fn)
				seq = i;
		if (seq < 0 || later_before_insert_trigger(trigdesc, seq))
			continue;
		for (int i = 0; i < trigdesc->numtriggers; i++)
			if (trigdesc->triggers[i].tgfoid == sequence_stored_fn)
				trigdesc->triggers[i].tgenabled = TRIGGER_DISABLED;
	}
}

/*
 * Is a trigger (its type, enablement, whether PostgreSQL made it, its
 * function) an AFTER INSERT trigger, of a row or of the statement, that the
 * user made?  Not our companion, nor one PostgreSQL made for a constraint
 * (a foreign key's check reads the referenced table, not our counters).
 */
static bool
user_after_insert_trigger(int16 tgtype, char tgenabled, bool tgisinternal,
						  Oid tgfoid)
{
	return TRIGGER_FOR_AFTER(tgtype) && TRIGGER_FOR_INSERT(tgtype) &&
		tgenabled != TRIGGER_DISABLED && !tgisinternal &&
		tgfoid != sequence_stored_fn;
}

/* A pg_trigger row that is a user's AFTER INSERT trigger */
static bool
user_after_insert_trigger_row(HeapTuple tuple)
{
	Form_pg_trigger t = (Form_pg_trigger) GETSTRUCT(tuple);

	return user_after_insert_trigger(t->tgtype, t->tgenabled,
									 t->tgisinternal, t->tgfoid);
}

/*
 * Has one of the partitions of a partitioned table (at any depth) a user's
 * AFTER INSERT trigger of its own?  Read in pg_trigger, since the
 * partitions are not locked yet: COPY locks those it routes rows to.
 */
static bool
partition_after_insert_trigger(Oid relid)
{
	List	   *partitions = find_all_inheritors(relid, NoLock, NULL);
	bool		found;

	/* the table's own triggers are looked at by the caller */
	partitions = list_delete_oid(partitions, relid);
	found = catalog_row_of_any(TriggerRelationId, TriggerRelidNameIndexId,
							   Anum_pg_trigger_tgrelid, partitions,
							   user_after_insert_trigger_row);
	list_free(partitions);
	return found;
}

/*
 * May a COPY FROM into "rel" hold its counters in memory (held_counters.c)?
 * Not when a trigger of the user's fires after its rows: COPY fires its
 * AFTER triggers, row and statement, inside itself, before a statement's
 * held counters are written, and what they read of ordering.sequences
 * would be behind last_sequence().  Such a COPY writes each counter row by
 * row, as a single-row INSERT does (an INSERT's AFTER triggers fire after
 * its counters are written).  Only a table with a sequencing trigger is
 * looked at.  Decided once per statement.
 */
bool
attached_copy_may_hold(Relation rel)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	bool		sequenced = false;

	if (trigdesc == NULL)
		return true;
	lookup_trigger_fns();
	if (!OidIsValid(sequence_trigger_fn))
		return true;
	for (int i = 0; i < trigdesc->numtriggers && !sequenced; i++)
		sequenced = trigdesc->triggers[i].tgfoid == sequence_trigger_fn;
	if (!sequenced)
		return true;
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (user_after_insert_trigger(t->tgtype, t->tgenabled,
									  t->tgisinternal, t->tgfoid))
			return false;
	}
	return rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE ||
		!partition_after_insert_trigger(RelationGetRelid(rel));
}

/*
 * The owner of a table the registry has for "stream", other than "relid",
 * whose owner's role the caller is not a member of (*other: that table); or
 * InvalidOid.  Attaching to a stream, or raising its counters, takes numbers
 * from it, so it belongs to whoever owns its tables (registry.c).  Read
 * with "snapshot" (SnapshotSelf for a caller that holds the registry's
 * lock, so that concurrent attaches see each other).
 */
Oid
attached_foreign_owner(OwnedRel *attachments, Oid relid, text *stream,
					   Snapshot snapshot, Oid *other)
{
	OwnedScan	scan;
	Oid			foreign = InvalidOid;

	owned_scan_begin(attachments, &scan, NULL, 0, InvalidStrategy, (Datum) 0,
					 snapshot);
	while (!OidIsValid(foreign) &&
		   owned_scan_next(&scan, ForwardScanDirection))
	{
		bool		isnull;
		Oid			tbl = DatumGetObjectId(slot_getattr(scan.slot,
														ATTACHMENTS_TBL,
														&isnull));
		HeapTuple	classtup;
		Oid			owner;

		if (tbl == relid ||
			!ordering_text_equal(DatumGetTextPP(slot_getattr(scan.slot,
															 ATTACHMENTS_STREAM,
															 &isnull)),
								 stream))
			continue;
		classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(tbl));
		if (!HeapTupleIsValid(classtup))
			continue;			/* dropped; forget_dropped_tables() missed it */
		owner = ((Form_pg_class) GETSTRUCT(classtup))->relowner;
		ReleaseSysCache(classtup);
		if (!has_privs_of_role(GetUserId(), owner))
		{
			foreign = owner;
			*other = tbl;
		}
	}
	owned_scan_end(&scan);
	return foreign;
}

/*
 * Is "rel" itself registered as attached to "stream" on these columns?
 */
bool
attached_registered_as(Relation rel, const char *stream,
					   const char *resource_column, const char *sequence_column)
{
	OwnedRel	attachments;
	OwnedRow	row;
	Datum		key[1] = {ObjectIdGetDatum(RelationGetRelid(rel))};
	bool		registered;

	owned_open(OWNED_ATTACHMENTS, AccessShareLock, &attachments);
	registered = owned_fetch(&attachments, key, SnapshotSelf, &row) &&
		DatumGetBool(row.values[ATTACHMENTS_ATTACHED - 1]) &&
		strcmp(TextDatumGetCString(row.values[ATTACHMENTS_STREAM - 1]), stream) == 0 &&
		strcmp(NameStr(*DatumGetName(row.values[ATTACHMENTS_RESOURCE_COLUMN - 1])),
			   resource_column) == 0 &&
		strcmp(NameStr(*DatumGetName(row.values[ATTACHMENTS_SEQUENCE_COLUMN - 1])),
			   sequence_column) == 0;
	owned_close(&attachments);
	return registered;
}

/*
 * The sequencing trigger of a relation, or NULL.
 */
static Trigger *
find_sequencing_trigger(Relation rel)
{
	lookup_trigger_fns();
	for (int i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
		if (rel->trigdesc->triggers[i].tgfoid == sequence_trigger_fn)
			return &rel->trigdesc->triggers[i];
	return NULL;
}

/*
 * The sequencing trigger of a relation whose companion fired
 * (ordering_internal.sequence_stored_trigger()); an error if it has none.
 */
Trigger *
attached_sequencing_trigger(Relation rel)
{
	Trigger    *trigger = find_sequencing_trigger(rel);

	if (trigger == NULL)
		refuse_incomplete(rel);
	return trigger;
}

/*
 * The verdict on the partitions of a partitioned table, for the statements
 * that insert through it: partition routing opens a partition only when a
 * row goes there, with nothing of ours in between, so a partition whose
 * sequencing trigger alone is disabled is found by reading pg_trigger.
 * Kept until a relcache invalidation of the table or of one of its
 * partitions at any depth: a partition's trigger created, dropped, enabled
 * or disabled invalidates the partition, and a partition attached, created
 * or detached invalidates the table it is a partition of, which is one of
 * these.  So an INSERT pays a hash lookup, and the invalidations that
 * autovacuum and ANALYZE send for other relations leave the verdict alone.
 */
typedef struct PartitionsEntry
{
	Oid			relid;			/* hash key: the partitioned table */
	bool		valid;			/* false: read again */
	Oid			incomplete;		/* a partition attached incompletely, or
								 * InvalidOid */
	int			npartitions;
	Oid		   *partitions;		/* its partitions when read, sorted, in
								 * TopMemoryContext */
} PartitionsEntry;

static HTAB *partitions_cache = NULL;

/* True while an entry is read; then whether an invalidation came meanwhile */
static bool partitions_reading = false;
static bool partitions_read_stale = false;

/*
 * Is the verdict of "entry" about relation "relid"?
 */
static bool
partitions_entry_covers(PartitionsEntry *entry, Oid relid)
{
	return entry->relid == relid ||
		(entry->npartitions > 0 &&
		 bsearch(&relid, entry->partitions, entry->npartitions, sizeof(Oid),
				 oid_cmp) != NULL);
}

/*
 * Forget the verdicts about a relation whose relcache entry is invalidated
 * (or all of them).  One that arrives while an entry is read may be about
 * a partition not listed yet, so that entry is read again next time.
 */
static void
partitions_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PartitionsEntry *entry;

	if (partitions_reading)
		partitions_read_stale = true;
	hash_seq_init(&status, partitions_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (entry->valid &&
			(!OidIsValid(relid) || partitions_entry_covers(entry, relid)))
			entry->valid = false;
}

/*
 * A relation's triggers that attach() created, seen one (function, enabled)
 * pair at a time, in name order: how its sequencing trigger is enabled (the
 * first, were there several), and its companions'.
 */
typedef struct AttachTriggers
{
	bool		has_sequence;
	char		sequence_enabled;
	bool		has_companion;
	char		companion_enabled;	/* the first companion's */
	bool		companions_differ;	/* from each other */
} AttachTriggers;

/*
 * Add one of a relation's triggers to what "seen" holds.
 */
static void
attach_triggers_add(AttachTriggers *seen, Oid tgfoid, char tgenabled)
{
	if (tgfoid == sequence_trigger_fn && !seen->has_sequence)
	{
		seen->has_sequence = true;
		seen->sequence_enabled = tgenabled;
	}
	else if (tgfoid == sequence_stored_fn || tgfoid == sequence_guard_fn)
	{
		if (!seen->has_companion)
			seen->companion_enabled = tgenabled;
		else if (tgenabled != seen->companion_enabled)
			seen->companions_differ = true;
		seen->has_companion = true;
	}
}

/*
 * Is a relation with these triggers attached incompletely: its sequencing
 * trigger enabled otherwise than a companion?  (A companion missing is
 * check_companions()'s business, when the sequencing trigger fires.)
 */
static bool
attach_triggers_incomplete(const AttachTriggers *seen)
{
	return seen->has_sequence && seen->has_companion &&
		(seen->companions_differ ||
		 seen->companion_enabled != seen->sequence_enabled);
}

/*
 * Are the triggers of one relation, read from "scan" of pg_trigger,
 * those of a table attached incompletely?
 */
static bool
catalog_incomplete(SysScanDesc scan, void *arg)
{
	AttachTriggers seen = {0};
	HeapTuple	tuple;

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_trigger t = (Form_pg_trigger) GETSTRUCT(tuple);

		attach_triggers_add(&seen, t->tgfoid, t->tgenabled);
	}
	return attach_triggers_incomplete(&seen);
}

/*
 * Read the verdict of "entry": its table's partitions (at any depth) and
 * the first of them attached incompletely.  Read in pg_trigger, since the
 * partitions are not locked yet: the statement locks those it routes rows
 * to.
 */
static void
partitions_read(PartitionsEntry *entry)
{
	List	   *partitions;
	ListCell   *lc;
	int			n = 0;

	partitions_reading = true;
	partitions_read_stale = false;
	partitions = find_all_inheritors(entry->relid, NoLock, NULL);
	/* the table's own triggers are looked at by the caller */
	partitions = list_delete_oid(partitions, entry->relid);
	entry->incomplete = catalog_first_of(TriggerRelationId,
										 TriggerRelidNameIndexId,
										 Anum_pg_trigger_tgrelid, partitions,
										 catalog_incomplete, NULL);
	if (entry->partitions != NULL)
		pfree(entry->partitions);
	entry->partitions = NULL;
	entry->npartitions = 0;
	if (partitions != NIL)
		entry->partitions = MemoryContextAlloc(TopMemoryContext,
											   list_length(partitions) * sizeof(Oid));
	foreach(lc, partitions)
		entry->partitions[n++] = lfirst_oid(lc);
	if (n > 1)
		qsort(entry->partitions, n, sizeof(Oid), oid_cmp);
	entry->npartitions = n;
	list_free(partitions);
	entry->valid = !partitions_read_stale;
	partitions_reading = false;
}

/*
 * A statement is about to insert through partitioned table "rel": refuse it
 * if one of its partitions is attached incompletely.  Refused whether or
 * not a row would go there, as a statement into that partition itself is:
 * which partition a row goes to is the data's business, and the table
 * needs mending in any case.
 */
static void
check_partitions(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	PartitionsEntry *entry;
	bool		found;
	char	   *name;

	lookup_trigger_fns();
	if (!OidIsValid(sequence_trigger_fn))
		return;
	if (partitions_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(PartitionsEntry);
		partitions_cache = hash_create("ordering partitioned tables", 16,
									   &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(partitions_relcache_callback, (Datum) 0);
	}
	entry = hash_search(partitions_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->npartitions = 0;
		entry->partitions = NULL;
	}
	if (!entry->valid)
		partitions_read(entry);
	if (!OidIsValid(entry->incomplete))
		return;
	name = get_rel_name(entry->incomplete);
	if (name != NULL)
		refuse_incomplete_named(name);
	/* dropped since: read again next time */
	entry->valid = false;
}

/*
 * A statement is about to insert into "rel" (its own copy of the relation's
 * triggers, "trigdesc"): refuse it if the sequencing trigger is disabled
 * while a companion is not.  The sequencing trigger checks its companions
 * when it fires (check_companions()), but when it is the one left out
 * nothing of ours would run for the row, which would be stored without a
 * number or with a repeated one.  Checked once per statement, not per row.
 */
void
attached_check_insert(Relation rel, TriggerDesc *trigdesc)
{
	AttachTriggers seen = {0};

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		check_partitions(rel);
	if (trigdesc == NULL || !trigdesc->trig_insert_before_row)
		return;
	lookup_trigger_fns();
	if (!OidIsValid(sequence_trigger_fn))
		return;
	for (int i = 0; i < trigdesc->numtriggers; i++)
		attach_triggers_add(&seen, trigdesc->triggers[i].tgfoid,
							trigdesc->triggers[i].tgenabled);
	if (attach_triggers_incomplete(&seen))
		refuse_incomplete(rel);
}

/*
 * What the sequencing trigger of a relation says (its arguments, the stream
 * defaulting to the relation's qualified name as the trigger does), in the
 * caller's memory; false if the relation has none.
 */
bool
attached_trigger_args(Relation rel, char **resource_column,
					  char **sequence_column, char **stream)
{
	Trigger    *trigger = find_sequencing_trigger(rel);

	if (trigger == NULL || trigger->tgnargs < 2)
		return false;
	*resource_column = pstrdup(trigger->tgargs[0]);
	*sequence_column = pstrdup(trigger->tgargs[1]);
	*stream = trigger->tgnargs >= 3 ? pstrdup(trigger->tgargs[2]) :
		psprintf("%s.%s", get_namespace_name(RelationGetNamespace(rel)),
				 RelationGetRelationName(rel));
	return true;
}

/*
 * ordering_internal.sequencing_trigger(tbl regclass, OUT resource_column
 * name, OUT sequence_column name, OUT stream text): what the sequencing
 * trigger of a table says, whether or not the registry agrees (all NULL if
 * it has none).  pg_trigger shows the same to anyone, less readably.
 */
Datum
ordering_sequencing_trigger(PG_FUNCTION_ARGS)
{
	Relation	rel = relation_open(PG_GETARG_OID(0), AccessShareLock);
	TupleDesc	desc;
	Datum		values[3] = {0};
	bool		nulls[3] = {true, true, true};
	char	   *resource_column;
	char	   *sequence_column;
	char	   *stream;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (attached_trigger_args(rel, &resource_column, &sequence_column, &stream))
	{
		values[0] = DirectFunctionCall1(namein, CStringGetDatum(resource_column));
		values[1] = DirectFunctionCall1(namein, CStringGetDatum(sequence_column));
		values[2] = CStringGetTextDatum(stream);
		nulls[0] = nulls[1] = nulls[2] = false;
	}
	relation_close(rel, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc),
													  values, nulls)));
}
