/*-------------------------------------------------------------------------
 *
 * owned.c
 *	  The storage layer's tables: each opened with its lock and checked
 *	  against its definition, the policy for a table someone altered, and
 *	  what every write must do (README.md, "The tables").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tupdesc_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "owned.h"
#include "owned_tid_cache.h"

/* A column as the install script made it */
typedef struct OwnedColumn
{
	const char *name;
	Oid			type;
	bool		notnull;
} OwnedColumn;

/* A table as the install script made it */
typedef struct OwnedTableDef
{
	const char *relname;		/* in schema "ordering" */
	const char *triggers[4];	/* the extension's own triggers on it */
	const char *checks[3];		/* its CHECK constraints, NULL-terminated */
	OwnedColumn cols[OWNED_MAX_NATTS];
	int			natts;
	int			nkeys;			/* the primary key: the first nkeys columns */
	const char *routing;		/* a column that a table of this shape found
								 * by OID may have after these, of any type,
								 * last in its primary key: the column Citus
								 * distributes it by (README.md) */
} OwnedTableDef;

static const OwnedTableDef owned_defs[OWNED_NUM_TABLES] = {
	[OWNED_SEQUENCES] = {
		.relname = "sequences",
		.natts = 3,
		.nkeys = 2,
		.cols = {{"stream", TEXTOID, true}, {"resource_id", TEXTOID, true},
		{"last_seq", INT8OID, true}},
		.checks = {"sequences_last_seq_check"},
		.triggers = {"sequences_load"},
		.routing = "resource_value"
	},
	[OWNED_POSITIONS] = {
		.relname = "positions",
		.natts = 7,
		.nkeys = 2,
		.cols = {{"consumer", TEXTOID, true}, {"resource_id", TEXTOID, true},
		{"position", INT8OID, true}, {"blocked_at", INT8OID, false},
		{"parked_count", INT8OID, true}, {"parked_lowest", INT8OID, true},
		{"parked_highest", INT8OID, true}},
		.checks = {"positions_position_check"},
		.routing = "resource_value"
	},
	[OWNED_PARKED] = {
		.relname = "parked",
		.natts = 5,
		.nkeys = 3,
		.cols = {{"consumer", TEXTOID, true}, {"resource_id", TEXTOID, true},
		{"seq", INT8OID, true}, {"payload", JSONBOID, false},
		{"parked_at", TIMESTAMPTZOID, true}},
		.checks = {"parked_seq_check"},
		.triggers = {"parked_inserted", "parked_updated", "parked_deleted",
		"parked_truncated"},
		.routing = "resource_value"
	},
	[OWNED_GAP_REQUESTS] = {
		.relname = "gap_requests",
		.natts = 9,
		.nkeys = 2,
		.cols = {{"consumer", TEXTOID, true}, {"resource_id", TEXTOID, true},
		{"missing_from", INT8OID, true}, {"missing_to", INT8OID, true},
		{"parked_count", INT8OID, true},
		{"first_parked_at", TIMESTAMPTZOID, true},
		{"detected_at", TIMESTAMPTZOID, true},
		{"last_requested_at", TIMESTAMPTZOID, true},
		{"attempts", INT4OID, true}},
		.routing = "resource_value"
	},
	[OWNED_DEAD_LETTERS] = {
		.relname = "dead_letter_events",
		.natts = 9,
		.nkeys = 2,
		.cols = {{"consumer", TEXTOID, true}, {"resource_id", TEXTOID, true},
		{"seq", INT8OID, true}, {"payload", JSONBOID, false},
		{"sqlstate", TEXTOID, false}, {"message", TEXTOID, false},
		{"detail", TEXTOID, false}, {"failed_at", TIMESTAMPTZOID, true},
		{"attempts", INT4OID, true}},
		.checks = {"dead_letter_events_seq_check", "dead_letter_events_attempts_check"},
		.routing = "resource_value"
	},
	[OWNED_ATTACHMENTS] = {
		.relname = "attachments",
		.natts = 7,
		.nkeys = 1,
		.cols = {{"tbl", REGCLASSOID, true}, {"stream", TEXTOID, true},
		{"resource_column", NAMEOID, true}, {"sequence_column", NAMEOID, true},
		{"attached", BOOLOID, true}, {"attached_at", TIMESTAMPTZOID, true},
		{"wake_relays", BOOLOID, true}}
	},
};

/* Per table, per backend: its OID, and whether its shape was checked */
typedef struct OwnedTableState
{
	Oid			relid;			/* InvalidOid until looked up */
	bool		checked;		/* the current relcache entry passed */
	TupleDesc	own_columns;	/* with dropped columns after the table's own:
								 * its descriptor without them (README.md),
								 * else NULL */
	Oid			own_columns_of; /* the relation it was made of */
} OwnedTableState;

static OwnedTableState owned_state[OWNED_NUM_TABLES];
static bool owned_callback_registered = false;

/* Per table opened by OID (README.md): the shape its relcache entry passed */
typedef struct OwnedRelidState
{
	Oid			relid;			/* hash key */
	OwnedTableId shape;
	AttrNumber	routing_att;	/* its routing column, or 0 */
	TupleDesc	own_columns;	/* as in OwnedTableState */
} OwnedRelidState;

static HTAB *owned_relid_state = NULL;

/*
 * Forget what we know of a table whose relcache entry is invalidated (or of
 * every table, relid = InvalidOid), and where its rows were found (the TID
 * caches).  One relcache callback serves the whole layer: a backend has
 * room for ten (MAX_RELCACHE_CALLBACKS), and PostgreSQL and Citus take up
 * to eight.
 */
static void
owned_relcache_callback(Datum arg, Oid relid)
{
	for (int i = 0; i < OWNED_NUM_TABLES; i++)
	{
		if (relid == InvalidOid || relid == owned_state[i].relid)
		{
			owned_state[i].relid = InvalidOid;
			owned_state[i].checked = false;
			owned_tid_cache_forget(relid);
		}
	}
	if (owned_relid_state == NULL)
		return;
	if (relid == InvalidOid)
	{
		HASH_SEQ_STATUS status;
		OwnedRelidState *entry;

		hash_seq_init(&status, owned_relid_state);
		while ((entry = hash_seq_search(&status)) != NULL)
			(void) hash_search(owned_relid_state, &entry->relid, HASH_REMOVE,
							   NULL);
		owned_tid_cache_forget(InvalidOid);
	}
	else if (hash_search(owned_relid_state, &relid, HASH_REMOVE, NULL) != NULL)
		owned_tid_cache_forget(relid);
}

/*
 * The OID of ordering.<relname>; an error if there is none.
 */
static Oid
owned_lookup(const char *relname)
{
	Oid			nspid = get_namespace_oid("ordering", false);
	Oid			relid = get_relname_relid(relname, nspid);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"ordering.%s\" does not exist", relname)));
	return relid;
}

/*
 * Refuse a table: "what" says what about it this layer does not support.
 */
static void
owned_refuse(Relation rel, int sqlstate, const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("ordering cannot use relation \"%s.%s\": %s",
					get_namespace_name(RelationGetNamespace(rel)),
					RelationGetRelationName(rel), what),
			 errhint("%s", hint)));
}

static const char *const reinstall_hint =
"Undo the change to the table, or reinstall the extension ordering.";

/*
 * The version of the extension's SQL objects in this database.
 */
static char *
installed_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("ordering"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * Refuse to work in a database where the extension is at another version
 * than this library (after the new version is installed and the server
 * restarted, until ALTER EXTENSION UPDATE), with the hint that fixes it.
 * While CREATE or ALTER EXTENSION runs its scripts the version is in flux,
 * and the scripts do not call us on tables they are changing.
 */
void
owned_check_version(void)
{
	char	   *version;

	if (creating_extension)
		return;
	version = installed_version();
	if (version != NULL && strcmp(version, ORDERING_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the extension ordering is at version %s in this database, but its library is version %s",
						version, ORDERING_VERSION),
				 errhint("Run ALTER EXTENSION ordering UPDATE in this database.")));
}

/*
 * The hint of a refusal: a table of the extension is reinstalled, one found
 * by OID (README.md) was changed by someone, who can undo it.
 */
static const char *
refusal_hint(bool by_relid)
{
	return by_relid ? "Undo the change to the table." : reinstall_hint;
}

/*
 * The collation a text key column must have: "C" in the extension's tables,
 * any deterministic one in a table found by OID (README.md).
 */
static bool
key_collation_ok(Oid collation, bool by_relid)
{
	if (collation == C_COLLATION_OID)
		return true;
	return by_relid && OidIsValid(collation) &&
		get_collation_isdeterministic(collation);
}

/*
 * The columns: names, types, not-null, and the collation of the text key
 * ones, in order, with nothing dropped or added but dropped columns after
 * the table's own (README.md).  A logged plain table.  Returns the number
 * of the routing column that a table found by OID may have right after its
 * own (a not-null column of any type), or 0.
 */
static AttrNumber
check_columns(Relation rel, const OwnedTableDef *def, bool by_relid)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			natts = def->natts;
	AttrNumber	routing_att = 0;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "it is not a plain table", refusal_hint(by_relid));
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "it is unlogged, so a crash would empty it",
					 psprintf("Run ALTER TABLE %s SET LOGGED.",
							  quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
														 RelationGetRelationName(rel))));
	if (desc->natts < def->natts)
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "its columns were changed",
					 by_relid ? refusal_hint(by_relid) :
					 "Run ALTER EXTENSION ordering UPDATE if the library was upgraded, else reinstall the extension.");
	if (by_relid && def->routing != NULL && desc->natts > natts)
	{
		Form_pg_attribute att = TupleDescAttr(desc, natts);

		if (!att->attisdropped && strcmp(NameStr(att->attname), def->routing) == 0)
		{
			if (!att->attnotnull || att->attgenerated != '\0')
				owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
							 psprintf("column \"%s\" was changed", def->routing),
							 refusal_hint(by_relid));
			routing_att = ++natts;
		}
	}
	for (int i = natts; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped)
			owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
						 psprintf("it has the column \"%s\", which ordering did not make",
								  NameStr(att->attname)),
						 psprintf("%sdrop the column (ALTER TABLE %s DROP COLUMN %s).",
								  by_relid ? "Undo the change: " :
								  "Run ALTER EXTENSION ordering UPDATE if the library was upgraded, else ",
								  quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
															 RelationGetRelationName(rel)),
								  quote_identifier(NameStr(att->attname))));
	}
	for (int i = 0; i < def->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const OwnedColumn *col = &def->cols[i];

		if (att->attisdropped || strcmp(NameStr(att->attname), col->name) != 0 ||
			att->atttypid != col->type || att->attnotnull != col->notnull ||
			(col->type == TEXTOID && i < def->nkeys &&
			 !key_collation_ok(att->attcollation, by_relid)) ||
			att->attgenerated != '\0')
			owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
						 psprintf("column \"%s\" was changed", col->name),
						 refusal_hint(by_relid));
	}
	return routing_att;
}

/*
 * Is this CHECK constraint one the definition knows?  In a table found by
 * OID it is named after that table, not after the extension's, and Citus
 * appends a shard ID to it on a shard (README.md): its name ends with
 * the known one's part after the extension's table name, "_<shard ID>"
 * aside.
 */
static bool
known_check(const OwnedTableDef *def, const char *ccname, bool by_relid)
{
	for (int j = 0; j < lengthof(def->checks) && def->checks[j]; j++)
	{
		const char *suffix = def->checks[j] + strlen(def->relname);
		size_t		len = strlen(ccname);
		size_t		slen = strlen(suffix);

		if (strcmp(def->checks[j], ccname) == 0)
			return true;
		if (!by_relid)
			continue;
		/* drop a trailing "_<digits>", Citus's shard ID */
		if (len > 0 && isdigit((unsigned char) ccname[len - 1]))
		{
			size_t		end = len;

			while (end > 0 && isdigit((unsigned char) ccname[end - 1]))
				end--;
			if (end > 0 && ccname[end - 1] == '_' &&
				end - 1 >= slen &&
				strncmp(ccname + end - 1 - slen, suffix, slen) == 0)
				return true;
		}
		if (len >= slen && strcmp(ccname + len - slen, suffix) == 0)
			return true;
	}
	return false;
}

/*
 * Triggers other than the extension's own, rules, row-level security, and
 * CHECK constraints the install did not make: their meaning lives in the
 * executor, which this layer does not run.  The functions of our triggers
 * are in schema ordering (sequences_load until the 1.2 update script moves
 * it, at its end) or ordering_internal.
 */
static void
check_executor_features(Relation rel, const OwnedTableDef *def, bool by_relid)
{
	Oid			nspid = get_namespace_oid("ordering", false);
	Oid			internal = get_namespace_oid("ordering_internal", true);
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	for (int i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *trig = &rel->trigdesc->triggers[i];
		char	   *funcname = get_func_name(trig->tgfoid);
		Oid			funcnsp = get_func_namespace(trig->tgfoid);
		bool		ours = false;

		for (int j = 0; !by_relid && j < lengthof(def->triggers) && def->triggers[j]; j++)
			ours = ours || strcmp(def->triggers[j], trig->tgname) == 0;
		ours = ours && (funcnsp == nspid ||
						(OidIsValid(internal) && funcnsp == internal));
		if (ours)
			continue;
		if (funcname != NULL && strncmp(funcname, "citus_", 6) == 0)
			owned_refuse(rel, ERRCODE_FEATURE_NOT_SUPPORTED,
						 "it is distributed by Citus",
						 "The extension's own tables must stay local tables.");
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 psprintf("it has the trigger \"%s\", which ordering's direct row access would not fire",
							  trig->tgname),
					 refusal_hint(by_relid));
	}
	if (rel->rd_rules != NULL)
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "it has rules", refusal_hint(by_relid));
	if (rel->rd_rel->relrowsecurity)
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "row-level security is enabled on it", refusal_hint(by_relid));
	for (int i = 0; constr != NULL && i < constr->num_check; i++)
	{
		if (!known_check(def, constr->check[i].ccname, by_relid))
			owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
						 psprintf("it has the check constraint \"%s\"",
								  constr->check[i].ccname),
						 refusal_hint(by_relid));
	}
}

/*
 * An index this layer can maintain: on plain columns, without a predicate,
 * not an exclusion constraint, unique only if checked immediately.  The
 * primary key must moreover be a btree on exactly the key columns, in the
 * collation of each text column ("C" in the extension's own tables), which
 * is what the scans rely on.
 */
static void
check_index(Relation rel, const OwnedTableDef *def, Oid indexid, bool primary,
			bool by_relid, AttrNumber routing_att)
{
	Relation	idx = index_open(indexid, AccessShareLock);
	Form_pg_index form = idx->rd_index;
	bool		ok;

	ok = heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) &&
		!form->indisexclusion && (!form->indisunique || form->indimmediate);
	if (ok && primary)
	{
		ok = idx->rd_rel->relam == BTREE_AM_OID &&
			form->indnkeyatts == def->nkeys + (routing_att != 0 ? 1 : 0) &&
			(routing_att == 0 || form->indkey.values[def->nkeys] == routing_att);
		for (int i = 0; ok && i < def->nkeys; i++)
			ok = form->indkey.values[i] == i + 1 &&
				(def->cols[i].type != TEXTOID ||
				 (idx->rd_indcollation[i] ==
				  TupleDescAttr(RelationGetDescr(rel), i)->attcollation &&
				  key_collation_ok(idx->rd_indcollation[i], by_relid)));
	}
	if (!ok)
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 psprintf(primary ? "its primary key \"%s\" was changed" :
							  "its index \"%s\" is on an expression, partial, deferrable or an exclusion constraint",
							  RelationGetRelationName(idx)),
					 primary ? refusal_hint(by_relid) :
					 "Drop that index: ordering maintains only indexes on plain columns.");
	index_close(idx, AccessShareLock);
}

/*
 * Check an open table against its definition; refuses it (see
 * README.md) or returns the number of its routing column (0: none).
 */
static AttrNumber
check_table(Relation rel, const OwnedTableDef *def, bool by_relid)
{
	List	   *indexes;
	ListCell   *lc;
	Oid			pkid = ordering_primary_key_index(rel);
	AttrNumber	routing_att;

	owned_check_version();
	routing_att = check_columns(rel, def, by_relid);
	if (!OidIsValid(pkid))
		owned_refuse(rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "it has no primary key that is checked immediately",
					 refusal_hint(by_relid));
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
		check_index(rel, def, lfirst_oid(lc), lfirst_oid(lc) == pkid, by_relid,
					routing_att);
	list_free(indexes);
	/* after the indexes: a deferrable key brings a trigger of its own */
	check_executor_features(rel, def, by_relid);
	return routing_att;
}

/*
 * A descriptor of the first natts columns of desc, with the values that
 * rows written before a column was added read for it (the "missing"
 * values); no longer the table's row type, which has the dropped columns.
 * Not a truncated copy of the whole descriptor: on 18 the attributes'
 * place in it depends on natts.
 */
static TupleDesc
columns_prefix(TupleDesc desc, int natts)
{
	TupleDesc	copy = CreateTemplateTupleDesc(natts);
	AttrMissing *missing = desc->constr ? desc->constr->missing : NULL;

	for (int i = 0; i < natts; i++)
	{
		memcpy(TupleDescAttr(copy, i), TupleDescAttr(desc, i),
			   ATTRIBUTE_FIXED_PART_SIZE);
		ordering_attribute_filled(copy, i);
	}
	if (missing != NULL)
	{
		copy->constr = palloc0(sizeof(TupleConstr));
		copy->constr->has_not_null = desc->constr->has_not_null;
		copy->constr->missing = palloc0(sizeof(AttrMissing) * natts);
		for (int i = 0; i < natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!missing[i].am_present)
				continue;
			copy->constr->missing[i].am_present = true;
			copy->constr->missing[i].am_value =
				datumCopy(missing[i].am_value, att->attbyval, att->attlen);
		}
	}
	copy->tdtypeid = RECORDOID;
	copy->tdtypmod = -1;
	return copy;
}

/*
 * The descriptor rows of a checked table are read and written with, if it
 * has dropped columns after its own: a copy of its own without them (README.md);
 * else NULL (its own).  "cached" is the copy made for relation
 * *cached_of before, if any, which is kept: the columns it keeps are the
 * ones check_columns() accepts, which no ALTER TABLE can change without
 * failing that check.  A copy is never freed: an OwnedRel of an outer call
 * may still use it.
 */
static TupleDesc
own_columns(Relation rel, int natts, TupleDesc cached, Oid *cached_of)
{
	MemoryContext old;
	TupleDesc	copy;

	if (RelationGetDescr(rel)->natts == natts)
		return NULL;
	if (cached != NULL && *cached_of == RelationGetRelid(rel))
		return cached;
	old = MemoryContextSwitchTo(TopMemoryContext);
	copy = columns_prefix(RelationGetDescr(rel), natts);
	MemoryContextSwitchTo(old);
	*cached_of = RelationGetRelid(rel);
	return copy;
}

/*
 * What an OwnedRel holds besides its open table: nothing opened yet.
 */
static void
owned_rel_init(OwnedRel *orel, OwnedTableId id, LOCKMODE mode)
{
	orel->id = id;
	orel->pk = NULL;
	orel->mode = mode;
	orel->nkeys = owned_defs[id].nkeys;
	orel->cxt = CurrentMemoryContext;
	orel->nindexes = -1;
	orel->indexes = NULL;
	orel->infos = NULL;
	orel->indexed_known = false;
	orel->indexed = NULL;
	orel->routing_att = 0;
}

/*
 * Open one of the tables with the given lock, check that we may use it, and
 * resolve what the call needs only after the lock (README.md).
 */
void
owned_open(OwnedTableId id, LOCKMODE mode, OwnedRel *orel)
{
	OwnedTableState *state = &owned_state[id];
	const OwnedTableDef *def = &owned_defs[id];

	if (!owned_callback_registered)
	{
		CacheRegisterRelcacheCallback(owned_relcache_callback, (Datum) 0);
		owned_callback_registered = true;
	}
	for (;;)
	{
		Oid			relid = OidIsValid(state->relid) ? state->relid :
		owned_lookup(def->relname);

		orel->rel = table_open(relid, mode);
		/* the lock processed invalidations: is it still our table? */
		if (state->relid == relid || owned_lookup(def->relname) == relid)
		{
			state->relid = relid;
			break;
		}
		table_close(orel->rel, mode);
	}
	if (!state->checked)
	{
		(void) check_table(orel->rel, def, false);
		state->own_columns = own_columns(orel->rel, def->natts, state->own_columns,
										 &state->own_columns_of);
		state->checked = true;
	}
	owned_rel_init(orel, id, mode);
	orel->desc = state->own_columns != NULL ? state->own_columns :
		RelationGetDescr(orel->rel);
}

/*
 * Open a table that has the shape of one of the extension's tables, found
 * by OID by the caller (README.md), with the given lock, and check that
 * we may use it as that shape.  Everything the other functions of this
 * layer do then works on it as on the extension's table: row access, the
 * TID cache, the locking and isolation rules of owned_rows.c.  The caller
 * decided from catalogs read before the lock; the lock has processed the
 * invalidations since, and the table is checked again if its relcache
 * entry was rebuilt, so a table that was altered or replaced meanwhile is
 * refused or no longer found.
 */
void
owned_open_relid(OwnedTableId shape, Oid relid, LOCKMODE mode,
				 OwnedRel *orel)
{
	OwnedRelidState *entry;
	bool		found;

	Assert(shape >= 0 && shape < OWNED_NUM_TABLES);
	if (!owned_callback_registered)
	{
		CacheRegisterRelcacheCallback(owned_relcache_callback, (Datum) 0);
		owned_callback_registered = true;
	}
	if (owned_relid_state == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(OwnedRelidState);
		owned_relid_state = hash_create("ordering tables opened by OID", 64,
										&ctl, HASH_ELEM | HASH_BLOBS);
	}
	orel->rel = try_table_open(relid, mode);
	if (orel->rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	/* the lock processed invalidations: a verdict found now is current */
	entry = hash_search(owned_relid_state, &relid, HASH_FIND, &found);
	if (entry == NULL || entry->shape != shape)
	{
		Oid			copied_of = InvalidOid;
		AttrNumber	routing_att = check_table(orel->rel, &owned_defs[shape], true);

		entry = hash_search(owned_relid_state, &relid, HASH_ENTER, &found);
		entry->shape = shape;
		entry->routing_att = routing_att;
		/* (a new copy after each rebuild of a table with dropped columns) */
		entry->own_columns = own_columns(orel->rel,
										 owned_defs[shape].natts + (routing_att != 0 ? 1 : 0),
										 NULL, &copied_of);
	}
	owned_rel_init(orel, shape, mode);
	orel->routing_att = entry->routing_att;
	orel->desc = entry->own_columns != NULL ? entry->own_columns :
		RelationGetDescr(orel->rel);
}

/*
 * The routing column of a new row of a table that has one (README.md):
 * the row's resource id (its second column, text, in every table that may
 * have one) read back as the column's type.  attach() and
 * distribute_consumer() accept only types whose key reads back as a value
 * equal to the one it was made of, so Citus would route that value to this
 * very shard, as it routes the rows the table's rows are about.
 */
void
owned_fill_routing(OwnedRel *orel, Datum *values, bool *nulls)
{
	Form_pg_attribute att = TupleDescAttr(orel->desc, orel->routing_att - 1);
	Oid			input;
	Oid			ioparam;

	getTypeInputInfo(att->atttypid, &input, &ioparam);
	values[orel->routing_att - 1] =
		OidInputFunctionCall(input, TextDatumGetCString(values[OWNED_RESOURCE_COLUMN - 1]),
							 ioparam, att->atttypmod);
	nulls[orel->routing_att - 1] = false;
}

/*
 * The OID of one of the tables, as last looked up: a key for caches, not a
 * table the caller may use without owned_open().
 */
Oid
owned_relid(OwnedTableId id)
{
	Oid			relid = owned_state[id].relid;

	return OidIsValid(relid) ? relid : owned_lookup(owned_defs[id].relname);
}

/*
 * The table's primary key, opened with the table's lock mode on first use.
 * Its OID comes from the relcache entry of the open table and is checked
 * again once the index is locked (README.md).
 */
Relation
owned_pk(OwnedRel *orel)
{
	while (orel->pk == NULL)
	{
		Oid			pkid = ordering_primary_key_index(orel->rel);
		Relation	idx;

		if (!OidIsValid(pkid))
			owned_refuse(orel->rel, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
						 "it has no primary key", reinstall_hint);
		idx = index_open(pkid, orel->mode);
		if (ordering_primary_key_index(orel->rel) == pkid)
			orel->pk = idx;
		else
			index_close(idx, orel->mode);
	}
	return orel->pk;
}

/*
 * Close what owned_open() or owned_open_relid() opened; the locks stay to the end of the
 * transaction, as for any table a statement used.
 */
void
owned_close(OwnedRel *orel)
{
	for (int i = 0; i < orel->nindexes; i++)
	{
		ordering_index_insert_cleanup(orel->indexes[i], orel->infos[i]);
		index_close(orel->indexes[i], NoLock);
	}
	if (orel->pk != NULL)
		index_close(orel->pk, NoLock);
	table_close(orel->rel, NoLock);
}

/*
 * Refuse to write in a read-only transaction or during recovery, before a
 * call does anything: SQLSTATE 25006, as core's own commands.  "what" names
 * the call.
 */
void
owned_prevent_write(const char *what)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s during recovery", what)));
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s in a read-only transaction", what)));
}

/*
 * Refuse a key longer than OWNED_MAX_KEY_BYTES; "what" names it.
 */
void
owned_check_key_length(text *key, const char *what)
{
	if (VARSIZE_ANY_EXHDR(key) > OWNED_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too long (%zu bytes, at most %d)", what,
						(size_t) VARSIZE_ANY_EXHDR(key), OWNED_MAX_KEY_BYTES)));
}

/*
 * Do the table's indexes cover any of these columns (attribute numbers
 * offset by FirstLowInvalidHeapAttributeNumber, as the relcache's bitmaps)?
 * The covered columns are read once per call, like the indexes themselves
 * (open_indexes): a statement that writes a row many times asks at every
 * write.
 */
bool
owned_columns_indexed(OwnedRel *orel, Bitmapset *columns)
{
	if (!orel->indexed_known)
	{
		MemoryContext old = MemoryContextSwitchTo(orel->cxt);

		orel->indexed = ordering_indexed_columns(orel->rel);
		orel->indexed_known = true;
		MemoryContextSwitchTo(old);
	}
	return bms_overlap(orel->indexed, columns);
}

/*
 * Open the table's ready indexes and build their IndexInfo, once per call,
 * as the executor's ExecOpenIndices() does once per statement: the list is
 * read after the table's lock (owned_open), and each index is locked like
 * the table until the transaction ends, so no index can be swapped or
 * dropped under the call (REINDEX CONCURRENTLY waits for us).  An index
 * that becomes ready meanwhile was being built by a CREATE or REINDEX
 * CONCURRENTLY that waits for our transaction before its validation, which
 * then sees our rows.
 */
static void
open_indexes(OwnedRel *orel)
{
	List	   *list = RelationGetIndexList(orel->rel);
	MemoryContext old = MemoryContextSwitchTo(orel->cxt);
	ListCell   *lc;

	orel->nindexes = 0;
	orel->indexes = palloc(sizeof(Relation) * Max(list_length(list), 1));
	orel->infos = palloc(sizeof(IndexInfo *) * Max(list_length(list), 1));
	foreach(lc, list)
	{
		Relation	idx = index_open(lfirst_oid(lc), orel->mode);

		if (!idx->rd_index->indisready)
		{
			index_close(idx, NoLock);
			continue;
		}
		orel->indexes[orel->nindexes] = idx;
		orel->infos[orel->nindexes] = BuildIndexInfo(idx);
		orel->nindexes++;
	}
	MemoryContextSwitchTo(old);
	list_free(list);
}

/*
 * Add the entries of a heap tuple just written to the ready indexes of the
 * table that need one (README.md): every index for a new row, those
 * heap_update() said for a new version (compat.h).  "changed" holds the
 * columns (offset as in owned_columns_indexed) that differ from the version
 * this one replaces, or is NULL for a new row: a unique index none of whose
 * columns changed needs no uniqueness check, the old version already held
 * those values.
 */
void
owned_index_insert(OwnedRel *orel, HeapTuple tuple, Bitmapset *changed,
				   OrderingIndexUpdate which)
{
	TupleDesc	desc = orel->desc;

	if (orel->nindexes < 0)
		open_indexes(orel);
	for (int n = 0; n < orel->nindexes; n++)
	{
		Relation	idx = orel->indexes[n];
		IndexInfo  *info = orel->infos[n];
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		bool		unchanged = changed != NULL;
		IndexUniqueCheck check = UNIQUE_CHECK_NO;

		if (!ordering_index_needs_entry(idx, which))
			continue;
		/* plain columns only (check_index): no executor state needed */
		for (int i = 0; i < info->ii_NumIndexAttrs; i++)
		{
			AttrNumber	attno = info->ii_IndexAttrNumbers[i];

			values[i] = heap_getattr(tuple, attno, desc, &isnull[i]);
			unchanged = unchanged &&
				!bms_is_member(attno - FirstLowInvalidHeapAttributeNumber, changed);
		}
		if (idx->rd_index->indisunique && !unchanged)
			check = UNIQUE_CHECK_YES;
		index_insert(idx, values, isnull, &tuple->t_self, orel->rel, check,
					 unchanged, info);
	}
}
