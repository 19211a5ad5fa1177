/*-------------------------------------------------------------------------
 *
 * citus_consumers.c
 *	  The consumers Citus distributes: which they are, the names of their
 *	  tables, and the shards of a resource's group, locked (README.md,
 *	  "Distributed consumers").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "citus.h"
#include "sha256.h"

PG_FUNCTION_INFO_V1(ordering_consumer_tag);

/* What this backend knows of the distributed consumers of its database */
typedef enum KnownConsumers
{
	KNOWN_UNKNOWN,				/* to be looked up (the catalog changed) */
	KNOWN_NONE,					/* no consumer is distributed */
	KNOWN_SOME
} KnownConsumers;

static KnownConsumers known = KNOWN_UNKNOWN;

/* Changes of the catalog seen, and as many when the last call was routed */
static uint32 epoch = 0;
static uint32 epoch_routed = 0;

/* The consumer last looked up, and whether it is distributed */
static struct
{
	bool		valid;
	char	   *name;			/* in TopMemoryContext */
	int			len;
	Oid			positions;		/* its positions table, or InvalidOid */
	CitusConsumerKey key;		/* its routing key, once asked for */
}			last;

static bool callback_registered = false;

/* The storage layer's tables, and the suffix of a consumer's own */
const CitusConsumerTable citus_consumer_tables[CITUS_CONSUMER_NUM_TABLES] = {
	{OWNED_POSITIONS, "_positions"},
	{OWNED_PARKED, "_parked"},
	{OWNED_DEAD_LETTERS, "_dead_letters"},
	{OWNED_GAP_REQUESTS, "_gap_requests"},
};

/*
 * The tag of a consumer (README.md) into buf (CITUS_CONSUMER_TAG_LEN + 1 bytes).
 */
void
citus_consumer_tag(text *consumer, char *buf)
{
	unsigned char digest[ORDERING_SHA256_LEN];
	static const char hex[] = "0123456789abcdef";

	ordering_sha256((const unsigned char *) VARDATA_ANY(consumer),
					VARSIZE_ANY_EXHDR(consumer), digest);
	memcpy(buf, "consumer_", 9);
	for (int i = 0; i < 8; i++)
	{
		buf[9 + 2 * i] = hex[digest[i] >> 4];
		buf[9 + 2 * i + 1] = hex[digest[i] & 0xf];
	}
	buf[CITUS_CONSUMER_TAG_LEN] = '\0';
}

/*
 * ordering_internal.consumer_tag(consumer text) returns text: the prefix
 * of the names of a distributed consumer's tables and call function.
 */
Datum
ordering_consumer_tag(PG_FUNCTION_ARGS)
{
	char		tag[CITUS_CONSUMER_TAG_LEN + 1];

	citus_consumer_tag(PG_GETARG_TEXT_PP(0), tag);
	PG_RETURN_TEXT_P(cstring_to_text(tag));
}

/*
 * Forget what we know of the distributed consumers: a relation was
 * created, dropped or renamed somewhere (any change of pg_class).
 */
static void
forget_consumers(Datum arg, int cacheid, uint32 hashvalue)
{
	known = KNOWN_UNKNOWN;
	epoch++;
	last.valid = false;
}

/*
 * The schema ordering_internal, or InvalidOid.
 */
static Oid
consumers_namespace(void)
{
	return get_namespace_oid("ordering_internal", true);
}

/*
 * The tags of the distributed consumers of this database (all of them with
 * tags, else only whether there is one: a list of one or none): the
 * relations ordering_internal.consumer_*_positions.  One range scan of
 * pg_class's name index.
 */
static List *
scan_consumers(bool all)
{
	Oid			nsp = consumers_namespace();
	Relation	rel;
	ScanKeyData keys[2];
	NameData	low;
	NameData	high;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *tags = NIL;

	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(RELNAMENSP, forget_consumers, (Datum) 0);
		callback_registered = true;
	}
	if (!OidIsValid(nsp))
		return NIL;
	namestrcpy(&low, "consumer_");
	namestrcpy(&high, "consumer`");
	rel = table_open(RelationRelationId, AccessShareLock);
	ScanKeyInit(&keys[0], Anum_pg_class_relname, BTGreaterEqualStrategyNumber,
				F_NAMEGE, NameGetDatum(&low));
	ScanKeyInit(&keys[1], Anum_pg_class_relname, BTLessStrategyNumber,
				F_NAMELT, NameGetDatum(&high));
	scan = systable_beginscan(rel, ClassNameNspIndexId, true, NULL, 2, keys);
	while ((all || tags == NIL) && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);
		const char *name = NameStr(form->relname);

		if (form->relnamespace == nsp && strlen(name) == CITUS_CONSUMER_TAG_LEN + 10 &&
			strcmp(name + CITUS_CONSUMER_TAG_LEN, "_positions") == 0)
			tags = lappend(tags, pnstrdup(name, CITUS_CONSUMER_TAG_LEN));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return tags;
}

/*
 * The tags of the distributed consumers of this database (of their tables
 * on this node).
 */
List *
citus_consumer_tags(void)
{
	return scan_consumers(true);
}

/*
 * A relation of a distributed consumer on this node: ordering_internal.
 * <tag><suffix>, or InvalidOid.
 */
Oid
citus_consumer_relation(const char *tag, const char *suffix)
{
	char		name[NAMEDATALEN];

	snprintf(name, sizeof(name), "%s%s", tag, suffix);
	return get_relname_relid(name, consumers_namespace());
}

/*
 * Forget a routing key described in TopMemoryContext.
 */
static void
forget_key(CitusConsumerKey *key)
{
	key->type = InvalidOid;
	if (key->type_name != NULL)
		pfree((char *) key->type_name);
	if (key->eq_name != NULL)
		pfree((char *) key->eq_name);
	key->type_name = NULL;
	key->eq_name = NULL;
}

/*
 * The positions table of a consumer if it is distributed, else
 * InvalidOid.  The last consumer asked about is remembered until the
 * catalog changes.
 */
Oid
citus_consumer_positions(text *consumer)
{
	char		tag[CITUS_CONSUMER_TAG_LEN + 1];
	int			len = VARSIZE_ANY_EXHDR(consumer);

	if (known == KNOWN_UNKNOWN)
		known = scan_consumers(false) != NIL ? KNOWN_SOME : KNOWN_NONE;
	if (known == KNOWN_NONE)
		return InvalidOid;
	if (last.valid && last.len == len &&
		memcmp(last.name, VARDATA_ANY(consumer), len) == 0)
		return last.positions;

	citus_consumer_tag(consumer, tag);
	if (last.name != NULL)
		pfree(last.name);
	forget_key(&last.key);
	last.name = MemoryContextAlloc(TopMemoryContext, Max(len, 1));
	memcpy(last.name, VARDATA_ANY(consumer), len);
	last.len = len;
	last.positions = citus_consumer_relation(tag, "_positions");
	last.valid = true;
	return last.positions;
}

/*
 * The routing's first question (consumer/citus_route.c): may a call's
 * consumer be distributed?  Not while no consumer of the database is: one
 * comparison.  Remembers the catalog's epoch the call is routed in, for
 * citus_consumer_confirm().
 */
bool
citus_consumers_possible(void)
{
	epoch_routed = epoch;
	return unlikely(known != KNOWN_NONE);
}

/*
 * A call routed to the extension's own tables has opened
 * ordering.positions, whose lock let in the invalidations of what committed
 * before (distribute_consumer() locks the local tables against writes):
 * if the catalog changed since it was routed, refuse it when its consumer
 * is distributed now (40001), or it would write a local row of a
 * distributed consumer.
 */
void
citus_consumer_confirm(text *consumer)
{
	if (likely(epoch == epoch_routed))
		return;
	if (OidIsValid(citus_consumer_positions(consumer)))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("consumer \"%s\" was distributed by a concurrent transaction",
						text_to_cstring(consumer)),
				 errhint("Retry the transaction.")));
	epoch_routed = epoch;
}

/* A distributed consumer's positions table that Citus no longer knows. */
void
citus_consumer_not_distributed(Oid positions)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"%s\" is not distributed by Citus",
					get_rel_name(positions)),
			 errhint("Distribute the consumer again with ordering.distribute_consumer().")));
	pg_unreachable();
}

/*
 * Splits and moves replaced the shards found, again and again, while we
 * locked them: the caller's transaction is to be retried.
 */
void
citus_consumer_shards_keep_changing(Oid positions)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("the shards of relation \"%s\" keep changing",
					get_rel_name(positions)),
			 errhint("Retry the transaction.")));
	pg_unreachable();
}

/*
 * Describe the routing key of a consumer's table into *key, its names
 * allocated in cxt.  The type is named with the column's typmod: Citus
 * lets a handler write the shard of a call's argument only by a constant
 * equal to it, typmod included, and a value assigned to the column
 * (varchar(n)) carries the column's.  The equality is the type's own
 * (citext's is not in pg_catalog).
 */
static void
describe_key(const CitusTable *table, CitusConsumerKey *key, MemoryContext cxt)
{
	Oid			type;
	int32		typmod;
	Oid			collation;
	TypeCacheEntry *entry;
	HeapTuple	tuple;
	Form_pg_operator opr;
	MemoryContext old;

	get_atttypetypmodcoll(table->relid, table->distcol, &type, &typmod,
						  &collation);
	key->typmod = typmod;
	key->type_name = NULL;
	key->eq_name = NULL;
	key->domain = get_typtype(type) == TYPTYPE_DOMAIN;
	if (type != TEXTOID)
	{
		entry = lookup_type_cache(type, TYPECACHE_EQ_OPR);
		tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(entry->eq_opr));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "no equality operator for type %s", format_type_be(type));
		opr = (Form_pg_operator) GETSTRUCT(tuple);
		old = MemoryContextSwitchTo(cxt);
		key->type_name = format_type_extended(type, typmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY);
		key->eq_name = psprintf("%s.%s",
								quote_identifier(get_namespace_name(opr->oprnamespace)),
								NameStr(opr->oprname));
		MemoryContextSwitchTo(old);
		ReleaseSysCache(tuple);
	}
	/* last: a key whose names failed stays unknown */
	key->type = type;
}

/*
 * Is table the positions table of the consumer last looked up?  Its
 * routing key is then kept with it, until the catalog changes.
 */
static bool
key_cached(const CitusTable *table)
{
	return last.valid && OidIsValid(last.positions) &&
		last.positions == table->relid;
}

/*
 * The type a distributed consumer's table is distributed by: text, or
 * (1.3) the type of its projection's distribution column, of its routing
 * column resource_value.
 */
Oid
citus_consumer_key_type(const CitusTable *table)
{
	if (key_cached(table))
		return citus_consumer_key_of(table)->type;
	return get_atttype(table->relid, table->distcol);
}

/*
 * The routing key of a distributed consumer's table (of its positions
 * table: kept with the consumer's routing entry, else described anew in
 * the caller's memory context).
 */
const CitusConsumerKey *
citus_consumer_key_of(const CitusTable *table)
{
	static CitusConsumerKey uncached;

	if (key_cached(table))
	{
		if (!OidIsValid(last.key.type))
			describe_key(table, &last.key, TopMemoryContext);
		return &last.key;
	}
	describe_key(table, &uncached, CurrentMemoryContext);
	return &uncached;
}

/*
 * Refuse a call of a consumer keyed by a domain that has constraints
 * (added after distribute_consumer(), which refuses such a domain): Citus
 * would run it here, not on the node of its resource (docs/citus.md,
 * "Domains with constraints").  The domain's constraints are the type
 * cache's, kept up to date by it.
 */
void
citus_consumer_key_check(const CitusConsumerKey *key, text *consumer)
{
	if (likely(!key->domain) || !DomainHasConstraints(key->type))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("distributed consumer \"%s\" is keyed by domain %s, which has constraints",
					text_to_cstring(consumer), format_type_be(key->type)),
			 errdetail("Citus runs a call on the node of its resource only when the call names the resource by a constant of the distribution column's type; a value of a domain with a CHECK or NOT NULL constraint is a coercion that checks it."),
			 errhint("Drop the domain's constraints, or distribute the consumer again with a projection distributed by the domain's base type.")));
}

/*
 * The value Citus routes a resource of a distributed consumer by (of the
 * type its tables are distributed by): the resource id itself for text;
 * else the id read as that type, which must give the id back as the type
 * writes it (ordering.resource_key() of the producer's value), or
 * another spelling of one value would be a resource of its own with a
 * position of its own ('42' and '042', a uuid in upper case).  A value
 * that does not parse fails as the type's input does (22P02, 22003 out of
 * range, 22001 too long for varchar(n), which is read with its length so
 * that no routed literal is cut); another spelling is refused with 22P02.
 * The input and output functions of the last type asked for are kept.
 */
Datum
citus_consumer_key(const CitusTable *table, text *resource)
{
	static Oid	cached_type = InvalidOid;
	static FmgrInfo input;
	static FmgrInfo output;
	static Oid	ioparam;
	Oid			type;
	int32		typmod;
	char	   *id;
	Datum		value;
	char	   *written;

	if (key_cached(table))
	{
		const CitusConsumerKey *key = citus_consumer_key_of(table);

		type = key->type;
		typmod = key->typmod;
	}
	else
	{
		Oid			collation;

		get_atttypetypmodcoll(table->relid, table->distcol, &type, &typmod,
							  &collation);
	}
	if (type == TEXTOID)
		return PointerGetDatum(resource);
	if (type != cached_type)
	{
		Oid			infn;
		Oid			outfn;
		bool		varlena;

		cached_type = InvalidOid;
		getTypeInputInfo(type, &infn, &ioparam);
		getTypeOutputInfo(type, &outfn, &varlena);
		fmgr_info_cxt(infn, &input, TopMemoryContext);
		fmgr_info_cxt(outfn, &output, TopMemoryContext);
		cached_type = type;
	}
	id = text_to_cstring(resource);
	value = InputFunctionCall(&input, id, ioparam, typmod);
	written = OutputFunctionCall(&output, value);
	if (strcmp(written, id) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("resource id \"%s\" is not written as type %s writes it",
						id, format_type_be(type)),
				 errdetail("The consumer's tables are distributed by a column of type %s; that value is the resource \"%s\".",
						   format_type_be(type), written),
				 errhint("Pass the resource id as ordering.resource_key() gives it for the producer's value.")));
	return value;
}

/*
 * Find the shard of a resource in a distributed consumer's positions
 * table, lock the shard group's metadata in ShareLock and look again until
 * the shard found before and after the lock is the same (a split may have
 * replaced it meanwhile).  See citus_meta.c.
 */
void
citus_consumer_lock_resource(Oid positions, text *resource, CitusTable *table,
							 CitusShard *shard)
{
	if (!citus_table(positions, table))
		citus_consumer_not_distributed(positions);
	for (int tries = 0;; tries++)
	{
		CitusShard	again;

		citus_shard_for(table, citus_consumer_key(table, resource), shard);
		citus_lock_shard(table, shard, ShareLock);
		/* the lock let in what committed meanwhile: look again */
		if (!citus_table(positions, table))
			elog(ERROR, "relation \"%s\" is no longer distributed",
				 get_rel_name(positions));
		citus_shard_for(table, citus_consumer_key(table, resource), &again);
		if (again.shardid == shard->shardid && again.index == shard->index)
		{
			/* and Citus's own view of it is ours (citus_meta.c) */
			citus_shard_settle(shard->shardid);
			return;
		}
		if (tries == CITUS_CONSUMER_SHARD_TRIES)
			citus_consumer_shards_keep_changing(positions);
	}
}
