/*-------------------------------------------------------------------------
 *
 * citus_counters.c
 *	  The counters of the streams Citus distributes: the counter shard a
 *	  shard's sequencing trigger counts in, next_sequence() and
 *	  last_sequence() routed to it, and the relays' shard lock (README.md,
 *	  "Distributed streams").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "common/md5.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "as_owner.h"
#include "citus.h"
#include "compat.h"
#include "plans.h"

/*
 * How long the trigger waits for this node's metadata to show a shard that
 * Citus already routes rows to (README.md), and how often it looks.
 */
#define METADATA_WAIT_MS		10000
#define METADATA_POLL_MS		10

/* The counter table of a stream: "sequences_" and 16 hex digits */
#define COUNTER_NAME_PREFIX		"sequences_"
#define COUNTER_NAME_HEXDIGITS	16

/*
 * Is Citus's metadata in this database?  (A relation lookup in the syscache:
 * cheap enough for next_sequence().)
 */
static bool
citus_metadata_present(void)
{
	return OidIsValid(get_relname_relid("pg_dist_partition",
										PG_CATALOG_NAMESPACE));
}

/*
 * The name of the counter table of a stream, in schema ordering_internal:
 * the same as SQL's ordering_internal.counter_table_name().
 */
static void
counter_table_name(text *stream, char *name)
{
	char		hex[33];
	const char *errstr = NULL;

	if (!pg_md5_hash(VARDATA_ANY(stream), VARSIZE_ANY_EXHDR(stream), hex,
					 &errstr))
		elog(ERROR, "could not compute the md5 of a stream name: %s", errstr);
	snprintf(name, NAMEDATALEN, "%s%.*s", COUNTER_NAME_PREFIX,
			 COUNTER_NAME_HEXDIGITS, hex);
}

/*
 * The counter table of a stream distributed by Citus, or InvalidOid (no
 * Citus here, or a stream that is not distributed).
 */
Oid
citus_stream_counter_table(text *stream)
{
	char		name[NAMEDATALEN];
	Oid			nspid;

	if (!citus_metadata_present())
		return InvalidOid;
	nspid = get_namespace_oid("ordering_internal", true);
	if (!OidIsValid(nspid))
		return InvalidOid;
	counter_table_name(stream, name);
	return get_relname_relid(name, nspid);
}

/*
 * Is "arg", a sequencing trigger's fourth argument, the counter table of
 * the stream, as attach() names it (registry.c registers only such a
 * trigger)?
 */
bool
citus_is_counter_argument(text *stream, const char *arg)
{
	char		name[NAMEDATALEN];

	counter_table_name(stream, name);
	return strcmp(arg, quote_qualified_identifier("ordering_internal",
												  name)) == 0;
}

/*
 * The shard ID at the end of a shard's name ("<table>_<shard ID>"), or -1.
 */
static int64
shard_id_of_name(const char *relname)
{
	const char *underscore = strrchr(relname, '_');
	int64		id = 0;

	if (underscore == NULL || underscore[1] == '\0')
		return -1;
	for (const char *p = underscore + 1; *p; p++)
	{
		if (!isdigit((unsigned char) *p) || id > (PG_INT64_MAX - 9) / 10)
			return -1;
		id = id * 10 + (*p - '0');
	}
	return id;
}

/*
 * What the metadata says of a shard and its counter shard (README.md).
 * $1 the shard ID, $2 the shard's qualified name, $3 the counter table's
 * qualified name, $4 the trigger.  Relations are found by name without
 * to_regclass(), which would want USAGE on their schema of whoever
 * inserts: the counter table in pg_class, the counter shard (which Citus
 * hides in pg_class from most sessions) by the caller, in the syscache.
 * $5 is the registry of distributed streams (citus_registry.c), whose
 * placement on this node is read too.
 */
#define SHARD_SQL \
"SELECT s.logicalrelid::pg_catalog.oid AS logical," \
"       p.partmethod::pg_catalog.text AS partmethod," \
"       pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) AS distcol," \
"       EXISTS (SELECT FROM pg_catalog.pg_dist_placement pl" \
"                WHERE pl.shardid OPERATOR(pg_catalog.=) s.shardid" \
"                  AND pl.groupid OPERATOR(pg_catalog.=)" \
"                      (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)) AS here," \
"       EXISTS (SELECT FROM pg_catalog.pg_trigger t" \
"                WHERE t.tgrelid OPERATOR(pg_catalog.=) s.logicalrelid" \
"                  AND t.tgfoid OPERATOR(pg_catalog.=) (SELECT x.tgfoid FROM pg_catalog.pg_trigger x" \
"                                                        WHERE x.oid OPERATOR(pg_catalog.=) $4)" \
"                  AND t.tgargs OPERATOR(pg_catalog.=) (SELECT x.tgargs FROM pg_catalog.pg_trigger x" \
"                                                        WHERE x.oid OPERATOR(pg_catalog.=) $4)) AS attached," \
"       cp.logicalrelid::pg_catalog.oid AS counters," \
"       cp.partmethod OPERATOR(pg_catalog.=) 'h'" \
"         AND cp.colocationid OPERATOR(pg_catalog.=) p.colocationid" \
"         AND pg_catalog.column_to_column_name(cp.logicalrelid, cp.partkey)" \
"             IN ('resource_id', 'resource_value') AS colocated," \
"       EXISTS (SELECT FROM pg_catalog.pg_dist_placement pl" \
"                WHERE pl.shardid OPERATOR(pg_catalog.=) cs.shardid" \
"                  AND pl.groupid OPERATOR(pg_catalog.=)" \
"                      (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)) AS counter_here," \
"       pg_catalog.parse_ident(pg_catalog.shard_name(cs.logicalrelid, cs.shardid, false))" \
"         AS counter_shard," \
"       s.shardminvalue::pg_catalog.int4 AS hash_min, s.shardmaxvalue::pg_catalog.int4 AS hash_max," \
"       (SELECT pg_catalog.parse_ident(pg_catalog.shard_name(rs.logicalrelid, rs.shardid, false))" \
"          FROM pg_catalog.pg_dist_shard rs" \
"          JOIN pg_catalog.pg_dist_placement rp ON rp.shardid OPERATOR(pg_catalog.=) rs.shardid" \
"         WHERE rs.logicalrelid OPERATOR(pg_catalog.=) $5" \
"           AND rp.groupid OPERATOR(pg_catalog.=)" \
"               (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)" \
"         LIMIT 1) AS registry_shard" \
"  FROM pg_catalog.pg_dist_shard s" \
"  JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid OPERATOR(pg_catalog.=) s.logicalrelid" \
"  LEFT JOIN (SELECT c.oid, c.relnamespace FROM pg_catalog.pg_class c" \
"              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace" \
"             WHERE n.nspname OPERATOR(pg_catalog.=) (pg_catalog.parse_ident($3))[1]" \
"               AND c.relname OPERATOR(pg_catalog.=) (pg_catalog.parse_ident($3))[2]) ct ON true" \
"  LEFT JOIN pg_catalog.pg_dist_partition cp ON cp.logicalrelid OPERATOR(pg_catalog.=) ct.oid" \
"  LEFT JOIN pg_catalog.pg_dist_shard cs" \
"         ON cs.logicalrelid OPERATOR(pg_catalog.=) cp.logicalrelid" \
"        AND cs.shardminvalue OPERATOR(pg_catalog.=) s.shardminvalue" \
" WHERE s.shardid OPERATOR(pg_catalog.=) $1" \
"   AND pg_catalog.shard_name(s.logicalrelid, s.shardid, false) OPERATOR(pg_catalog.=) $2"

/* A column of the one row of SHARD_SQL */
static Datum
shard_column(const char *name, bool *isnull)
{
	int			fnum = SPI_fnumber(SPI_tuptable->tupdesc, name);

	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, fnum,
						 isnull);
}

/*
 * The relation here that a column of SHARD_SQL names (a parse_ident()
 * array of schema and name), or InvalidOid.
 */
static Oid
shard_column_relid(const char *column)
{
	bool		isnull;
	Datum		name = shard_column(column, &isnull);
	Datum	   *parts;
	int			nparts;
	Oid			nspid;

	if (isnull)
		return InvalidOid;
	deconstruct_array(DatumGetArrayTypeP(name), TEXTOID, -1, false,
					  TYPALIGN_INT, &parts, NULL, &nparts);
	if (nparts != 2)
		return InvalidOid;
	nspid = get_namespace_oid(TextDatumGetCString(parts[0]), true);
	if (!OidIsValid(nspid))
		return InvalidOid;
	return get_relname_relid(TextDatumGetCString(parts[1]), nspid);
}

/*
 * Does the row SHARD_SQL just read say that the shard and its counter
 * shard are placed on this node, and does the counter shard exist?  Not
 * yet, while this node has not committed a move or split that another one
 * has (README.md).
 */
static bool
metadata_settled(void)
{
	bool		isnull;

	if (SPI_processed != 1 || !DatumGetBool(shard_column("here", &isnull)) ||
		!DatumGetBool(shard_column("counter_here", &isnull)))
		return false;
	return OidIsValid(shard_column_relid("counter_shard"));
}

/* Refuse a relation whose trigger names a counter table but is no shard */
static void
refuse_not_a_shard(Relation rel, const char *counters)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("relation \"%s\" is not a shard of a table distributed by Citus",
					RelationGetRelationName(rel)),
			 errdetail("Its sequencing trigger names the counter table %s of a distributed stream, which only the shards of a distributed table that ordering.attach() attached count in.",
					   counters),
			 errhint("Call ordering.attach() on the table itself.")));
}

/*
 * The counter shard that the sequencing trigger of a shard ("rel", with its
 * trigger "trigger" of four arguments) counts in, on this node; refuses
 * (README.md) if there is none it may use.  *logical and *counters are
 * set to the distributed table and the counter table, whose relcache
 * invalidations must forget the answer.
 */
Oid
citus_counter_shard(Relation rel, Trigger *trigger, Oid *logical,
					Oid *counters, int32 *hash_min, int32 *hash_max)
{
	static SPIPlanPtr plan = NULL;
	const char *counter_name = trigger->tgargs[3];
	const char *resource_column = trigger->tgargs[0];
	int64		shardid = shard_id_of_name(RelationGetRelationName(rel));
	Oid			argtypes[5] = {INT8OID, TEXTOID, TEXTOID, OIDOID, OIDOID};
	Datum		args[5];
	Oid			registry = citus_registry_relid();
	bool		isnull;
	char	   *partmethod;
	char	   *distcol;
	Oid			shard;
	int			ret;

	if (shardid < 0 || !citus_metadata_present())
		refuse_not_a_shard(rel, counter_name);

	args[0] = Int64GetDatum(shardid);
	args[1] = CStringGetTextDatum(quote_qualified_identifier(
															 get_namespace_name(RelationGetNamespace(rel)),
															 RelationGetRelationName(rel)));
	args[2] = CStringGetTextDatum(counter_name);
	args[3] = ObjectIdGetDatum(trigger->tgoid);
	args[4] = ObjectIdGetDatum(registry);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) ordering_prepare_once(&plan, SHARD_SQL, 5, argtypes, 0);
	for (int waited = 0;; waited += METADATA_POLL_MS)
	{
		/* the newest metadata, whatever the isolation level (README.md) */
		ret = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(),
								   InvalidSnapshot, true, false, 1);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "could not read the Citus metadata of shard \"%s\": %s",
				 RelationGetRelationName(rel), SPI_result_code_string(ret));
		if (metadata_settled() || waited >= METADATA_WAIT_MS)
			break;
		pg_usleep(METADATA_POLL_MS * 1000L);
		CHECK_FOR_INTERRUPTS();
	}
	if (SPI_processed != 1)
		refuse_not_a_shard(rel, counter_name);

	*logical = DatumGetObjectId(shard_column("logical", &isnull));
	partmethod = TextDatumGetCString(shard_column("partmethod", &isnull));
	distcol = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
						   SPI_fnumber(SPI_tuptable->tupdesc, "distcol"));
	if (!DatumGetBool(shard_column("here", &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("shard \"%s\" is not placed on this node",
						RelationGetRelationName(rel)),
				 errdetail("Citus moved or split it; it is dropped soon, and a row stored in it now would be lost with its sequence number."),
				 errhint("Insert into the distributed table, not into its shards.")));
	if (strcmp(partmethod, "h") != 0 || distcol == NULL ||
		strcmp(distcol, resource_column) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is no longer distributed by hash on its resource column \"%s\"",
						get_rel_name(*logical), resource_column),
				 errdetail("Its counters are co-located with its shards only while Citus distributes it by that column."),
				 errhint("Distribute it by column \"%s\" again, or call ordering.detach() and ordering.attach() on it.",
						 resource_column)));
	if (!DatumGetBool(shard_column("attached", &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("relation \"%s\" is a shard of \"%s\", which is not attached with this sequencing trigger",
						RelationGetRelationName(rel), get_rel_name(*logical)),
				 errdetail("Only the shards of a table attached with ordering.attach() are sequenced; a copy of its trigger elsewhere would count numbers of its own."),
				 errhint("Call ordering.attach() on table \"%s\".",
						 get_rel_name(*logical))));
	/* a trigger made by hand, like attach()'s, on another table */
	citus_registry_check(rel, *logical, trigger->tgargs[2],
						 OidIsValid(registry),
						 shard_column_relid("registry_shard"));

	*counters = DatumGetObjectId(shard_column("counters", &isnull));
	if (isnull || !DatumGetBool(shard_column("colocated", &isnull)) || isnull ||
		!DatumGetBool(shard_column("counter_here", &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the counter table %s of table \"%s\" is missing or not co-located with it on this node",
						counter_name, get_rel_name(*logical)),
				 errhint("Call ordering.detach() and ordering.attach() on table \"%s\".",
						 get_rel_name(*logical))));
	shard = shard_column_relid("counter_shard");
	if (!OidIsValid(shard))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the shard of counter table %s next to shard \"%s\" does not exist on this node",
						counter_name, RelationGetRelationName(rel)),
				 errhint("Call ordering.detach() and ordering.attach() on table \"%s\".",
						 get_rel_name(*logical))));
	*hash_min = DatumGetInt32(shard_column("hash_min", &isnull));
	*hash_max = DatumGetInt32(shard_column("hash_max", &isnull));
	SPI_finish();
	return shard;
}

/*
 * Refuse a row whose resource (value, keyed "resource") does not hash into
 * the shard's range: it was stored into the shard by hand, not routed by
 * Citus, and the counter shard next to it does not count its resource
 * (README.md).  The hash is Citus's: the hash function of the column's
 * type (of its base type, for a domain), in the column's collation.
 */
void
citus_check_shard_range(Relation rel, int32 hash_min, int32 hash_max,
						AttrNumber resattno, Datum value, text *resource)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), resattno - 1);
	TypeCacheEntry *type = lookup_type_cache(getBaseType(att->atttypid),
											 TYPECACHE_HASH_PROC_FINFO);
	int32		hash;

	if (!OidIsValid(type->hash_proc_finfo.fn_oid))
		elog(ERROR, "no hash function for the resource column of relation \"%s\"",
			 RelationGetRelationName(rel));
	hash = DatumGetInt32(FunctionCall1Coll(&type->hash_proc_finfo,
										   att->attcollation, value));

	if (hash < hash_min || hash > hash_max)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("resource \"%s\" does not belong in shard \"%s\"",
						text_to_cstring(resource), RelationGetRelationName(rel)),
				 errdetail("Its hash %d is outside the shard's range [%d, %d]: the row was not routed by Citus, and the counters next to this shard do not count its resource.",
						   hash, hash_min, hash_max),
				 errhint("Insert into the distributed table, not into its shards.")));
}

/*
 * The type of the routing column of a counter table, qualified, or NULL
 * for one distributed by its text resource_id (README.md); *eq is set to
 * its equality operator, qualified, as OPERATOR() takes it (citext's is not
 * in pg_catalog).
 */
static char *
routing_type(Oid counters, char **eq)
{
	AttrNumber	attno = get_attnum(counters, "resource_value");
	Oid			type;
	int32		typmod;
	Oid			collation;
	TypeCacheEntry *entry;
	HeapTuple	tuple;
	Form_pg_operator op;

	if (attno == InvalidAttrNumber)
		return NULL;
	get_atttypetypmodcoll(counters, attno, &type, &typmod, &collation);
	entry = lookup_type_cache(type, TYPECACHE_EQ_OPR);
	if (!OidIsValid(entry->eq_opr))
		elog(ERROR, "no equality operator for the routing column of %s",
			 get_rel_name(counters));
	tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(entry->eq_opr));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator %u", entry->eq_opr);
	op = (Form_pg_operator) GETSTRUCT(tuple);
	*eq = psprintf("%s.%s", quote_identifier(get_namespace_name(op->oprnamespace)),
				   NameStr(op->oprname));
	ReleaseSysCache(tuple);
	return format_type_extended(type, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

/*
 * Run one statement about the counter row of (stream, resource) in the
 * counter table "counters" through SPI, as the owner of that table (the
 * caller was allowed to run next_sequence() or last_sequence(), and needs no
 * rights on the counter table, as on one node); Citus routes it to the node
 * of the counter shard.  "sql" has a %s for the table; "routed", for a
 * counter table with a routing column, whose value (the key read back as
 * its type) routes the statement, has four: the table, the type, its
 * equality operator and the type again (a statement skips what it does
 * not use with %.0s).  Returns the bigint of its one row, or 0 with none.
 */
static int64
counter_statement(Oid counters, const char *sql, const char *routed,
				  text *stream, text *resource, bool read_only)
{
	char	   *eq = NULL;
	char	   *type = routing_type(counters, &eq);
	const char *table = quote_qualified_identifier("ordering_internal",
												   get_rel_name(counters));
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	AsOwner		caller;
	int64		result = 0;
	int			ret;

	args[0] = PointerGetDatum(stream);
	args[1] = PointerGetDatum(resource);
	as_owner(counters, &caller);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args(type == NULL ? psprintf(sql, table) :
								psprintf(routed, table, type, eq, type),
								2, argtypes, args, NULL, read_only, 1);
	if (ret < 0)
		elog(ERROR, "could not reach the counter of a distributed stream: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull);

		result = isnull ? 0 : DatumGetInt64(d);
	}
	SPI_finish();
	as_caller(&caller);
	return result;
}

/*
 * next_sequence() of a stream distributed by Citus, whose counter table is
 * "counters" (README.md): an upsert of the counter row, which Citus
 * routes to the node of its shard, in the caller's transaction.  counters.c
 * asks first whether a statement of ours holds the counter.
 */
int64
citus_counter_next(Oid counters, text *stream, text *resource)
{
	return counter_statement(counters,
							 "INSERT INTO %s AS c (stream, resource_id, last_seq) "
							 "VALUES ($1, $2, 1) "
							 "ON CONFLICT (stream, resource_id) DO UPDATE "
							 "   SET last_seq = c.last_seq OPERATOR(pg_catalog.+) 1 "
							 "RETURNING c.last_seq",
							 "INSERT INTO %s AS c (stream, resource_id, last_seq, resource_value) "
							 "VALUES ($1, $2, 1, CAST($2 AS %s)) "
							 "%.0s%.0s"
							 "ON CONFLICT (stream, resource_id, resource_value) DO UPDATE "
							 "   SET last_seq = c.last_seq OPERATOR(pg_catalog.+) 1 "
							 "RETURNING c.last_seq",
							 stream, resource, false);
}

/*
 * last_sequence() of a stream distributed by Citus (0 if the resource has
 * no counter).  The caller has checked that its caller may run
 * last_sequence().
 */
int64
citus_counter_last(Oid counters, text *stream, text *resource)
{
	return counter_statement(counters,
							 "SELECT c.last_seq FROM %s c "
							 " WHERE c.stream OPERATOR(pg_catalog.=) $1 "
							 "   AND c.resource_id OPERATOR(pg_catalog.=) $2",
							 "SELECT c.last_seq FROM %s c "
							 " WHERE c.stream OPERATOR(pg_catalog.=) $1 "
							 "   AND c.resource_id OPERATOR(pg_catalog.=) $2 "
							 "   AND c.resource_value OPERATOR(%.0s%s) CAST($2 AS %s)",
							 stream, resource, true);
}

/*
 * Raise the counters of a distributed stream (in its counter table
 * "counters") to the highest number of each resource of "rel", and to
 * ordering.sequences' counters of the stream (a table attached before it
 * was distributed), never lowering one; restore.c checked that the caller
 * may.  Routed by Citus to the node of each counter shard, as the caller:
 * each statement runs only where there is something to raise from, since
 * its INSERT needs INSERT and UPDATE on the counter table even when it
 * writes nothing, so the owner of the stream's tables, who may not write
 * the counter table, attaches a table that holds no numbers (a new table
 * of the stream) as on one node.
 */
void
citus_raise_counters(Relation rel, text *stream, const char *resource_column,
					 const char *sequence_column, Oid counters)
{
	const char *tbl = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												 RelationGetRelationName(rel));
	const char *ctbl = quote_qualified_identifier("ordering_internal",
												  get_rel_name(counters));
	const char *res = quote_identifier(resource_column);
	const char *seq = quote_identifier(sequence_column);
	char	   *eq = NULL;
	char	   *type = routing_type(counters, &eq);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {PointerGetDatum(stream)};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(psprintf("SELECT FROM %s t WHERE t.%s IS NOT NULL LIMIT 1",
							 tbl, seq), true, 1) == SPI_OK_SELECT &&
		SPI_processed > 0)
		SPI_execute_with_args(type == NULL ?
							  psprintf("INSERT INTO %s AS c (stream, resource_id, last_seq) "
									   "SELECT $1, t.%s, pg_catalog.max(t.%s) FROM %s t "
									   " WHERE t.%s IS NOT NULL GROUP BY t.%s "
									   "ON CONFLICT (stream, resource_id) DO UPDATE "
									   "   SET last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq)",
									   ctbl, res, seq, tbl, seq, res) :
		/* grouped by key too: citext's 'A' and 'a' are two resources */
							  psprintf("INSERT INTO %s AS c (stream, resource_id, last_seq, resource_value) "
									   "SELECT $1, ordering.resource_key(t.%s), pg_catalog.max(t.%s), t.%s "
									   "  FROM %s t "
									   " WHERE t.%s IS NOT NULL GROUP BY t.%s, ordering.resource_key(t.%s) "
									   "ON CONFLICT (stream, resource_id, resource_value) DO UPDATE "
									   "   SET last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq)",
									   ctbl, res, seq, res, tbl, seq, res, res),
							  1, argtypes, args, NULL, false, 0);
	if (SPI_execute_with_args("SELECT FROM ordering.sequences s"
							  " WHERE s.stream OPERATOR(pg_catalog.=) $1 LIMIT 1",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed > 0)
		SPI_execute_with_args(type == NULL ?
							  psprintf("INSERT INTO %s AS c (stream, resource_id, last_seq) "
									   "SELECT s.stream, s.resource_id, s.last_seq FROM ordering.sequences s "
									   " WHERE s.stream OPERATOR(pg_catalog.=) $1 "
									   "ON CONFLICT (stream, resource_id) DO UPDATE "
									   "   SET last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq)",
									   ctbl) :
							  psprintf("INSERT INTO %s AS c (stream, resource_id, last_seq, resource_value) "
									   "SELECT s.stream, s.resource_id, s.last_seq, CAST(s.resource_id AS %s) "
									   "  FROM ordering.sequences s "
									   " WHERE s.stream OPERATOR(pg_catalog.=) $1 "
									   "ON CONFLICT (stream, resource_id, resource_value) DO UPDATE "
									   "   SET last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq)",
									   ctbl, type),
							  1, argtypes, args, NULL, false, 0);
	SPI_finish();
}

/*
 * ordering_internal.lock_shard_for_relay(outbox regclass, shardid bigint)
 * returns void: the shard metadata lock of a shard of "outbox", in
 * ShareLock mode, to the end of the caller's transaction, as Citus's
 * executor takes it for a write through the distributed table.  Relays
 * (claim_unpublished(outbox, n)) read and mark shards directly, on their
 * node; with this lock no move or split of the shard completes while they
 * hold claimed rows, so a mark is never lost with an old shard.  Citus's
 * lock_shard_metadata() wants the table's owner: it runs as the owner, for
 * a caller who may UPDATE the outbox (which marking needs anyway).
 */
PG_FUNCTION_INFO_V1(ordering_lock_shard_for_relay);

Datum
ordering_lock_shard_for_relay(PG_FUNCTION_ARGS)
{
	Oid			outbox = PG_GETARG_OID(0);
	int64		shardid = PG_GETARG_INT64(1);
	Oid			argtypes[2] = {INT8OID, OIDOID};
	Datum		args[2];
	AsOwner		caller;
	AclResult	aclresult;
	int			ret;

	aclresult = pg_class_aclcheck(outbox, GetUserId(), ACL_UPDATE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(outbox));
	if (!citus_metadata_present())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("relation \"%s\" is not distributed by Citus",
						get_rel_name(outbox))));

	args[0] = Int64GetDatum(shardid);
	args[1] = ObjectIdGetDatum(outbox);
	as_owner(outbox, &caller);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args("SELECT pg_catalog.lock_shard_metadata(5, ARRAY[s.shardid])"
								"  FROM pg_catalog.pg_dist_shard s"
								" WHERE s.shardid OPERATOR(pg_catalog.=) $1"
								"   AND s.logicalrelid OPERATOR(pg_catalog.=) $2::pg_catalog.regclass",
								2, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not lock the metadata of shard " INT64_FORMAT ": %s",
			 shardid, SPI_result_code_string(ret));

	/*
	 * No row: the shard is not one of the outbox's, or a split or move
	 * committed between the caller's list of shards and this statement's
	 * snapshot and took it away.  Nothing is locked either way, and
	 * relay_shards() then finds no placement of it here and skips it; an
	 * error would fail the relay's transaction for a shard it no longer reads
	 * (TAP 040 saw it during a non-blocking split).
	 */
	SPI_finish();
	as_caller(&caller);
	PG_RETURN_VOID();
}
