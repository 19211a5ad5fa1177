/*-------------------------------------------------------------------------
 *
 * resource_key.c
 *	  The text a resource of any type is keyed by, the same in every session
 *	  whatever its settings (README.md, "Resource keys").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "producer.h"

/* Nesting of arrays, ranges and composites we look into for refused types */
#define KEY_TYPE_MAX_DEPTH	8

PG_FUNCTION_INFO_V1(ordering_resource_key);
PG_FUNCTION_INFO_V1(ordering_check_resource_type);

/* The settings every setting-dependent output is printed under */
static const struct
{
	const char *name;
	const char *value;
}			fixed_settings[] = {
	{"datestyle", "ISO, YMD"},
	{"intervalstyle", "postgres"},
	{"timezone", "UTC"},
	{"extra_float_digits", "1"},
	{"bytea_output", "hex"},
};

/*
 * Does the output of this (base) type depend on no setting?
 */
static bool
output_is_fixed(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case NUMERICOID:
		case UUIDOID:
		case BOOLOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case CHAROID:
			return true;
		default:
			return type_is_enum(typid);
	}
}

/*
 * The setting the output of a (base) type depends on, if it is one we do
 * not fix (README.md); NULL for the other types.
 */
static const char *
unfixed_setting(Oid typid)
{
	switch (typid)
	{
		case MONEYOID:
			return "lc_monetary";
		case REGCLASSOID:
		case REGTYPEOID:
		case REGPROCOID:
		case REGPROCEDUREOID:
		case REGOPEROID:
		case REGOPERATOROID:
		case REGCONFIGOID:
		case REGDICTIONARYOID:
		case REGCOLLATIONOID:
			return "search_path";
		default:
			return NULL;
	}
}

/*
 * The setting the output of a type depends on, looking into domains,
 * arrays, ranges and composites ("depth" levels deep at most); NULL if none
 * we do not fix.
 */
static const char *
type_unfixed_setting(Oid typid, int depth)
{
	Oid			base = getBaseType(typid);
	const char *setting = unfixed_setting(base);
	Oid			inner;
	char		typtype;

	if (setting != NULL || depth >= KEY_TYPE_MAX_DEPTH)
		return setting;
	typtype = get_typtype(base);
	if (typtype == TYPTYPE_RANGE)
		return type_unfixed_setting(get_range_subtype(base), depth + 1);
	if (typtype == TYPTYPE_MULTIRANGE)
		return type_unfixed_setting(get_multirange_range(base), depth + 1);
	inner = get_element_type(base);
	if (OidIsValid(inner))
		return type_unfixed_setting(inner, depth + 1);
	if (typtype == TYPTYPE_COMPOSITE)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(base, -1);

		for (int i = 0; setting == NULL && i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				setting = type_unfixed_setting(TupleDescAttr(desc, i)->atttypid,
											   depth + 1);
		ReleaseTupleDesc(desc);
	}
	return setting;
}

/*
 * Refuse a resource type whose text depends on a setting we do not fix
 * (README.md).  The last type that passed is remembered, so that the
 * rows of one table (which all have one type) look it up once.
 */
static void
check_type(Oid typid)
{
	static Oid	checked = InvalidOid;
	const char *setting;

	if (typid == checked)
		return;
	setting = type_unfixed_setting(typid, 0);
	if (setting != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a resource of type %s cannot be sequenced",
						format_type_be(typid)),
				 errdetail("Its text depends on the setting %s, so two sessions could key one resource differently.",
						   setting),
				 errhint("Use a resource column of type text, an integer type, numeric or uuid.")));
	checked = typid;
}

/*
 * A numeric's text without the trailing zeros of its fraction (and the
 * point, if nothing is left after it): 1.50 and 1.5 key alike.  Changes
 * "out" in place.
 */
static void
trim_fraction(char *out)
{
	char	   *point = strchr(out, '.');
	char	   *end;

	if (point == NULL)
		return;
	end = point + strlen(point) - 1;
	while (end > point && *end == '0')
		*end-- = '\0';
	if (end == point)
		*point = '\0';
}

/*
 * Is the value of this (base) type a float zero, of either sign?
 */
static bool
float_zero(Datum value, Oid base)
{
	if (base == FLOAT8OID)
		return DatumGetFloat8(value) == 0.0;
	if (base == FLOAT4OID)
		return DatumGetFloat4(value) == 0.0f;
	return false;
}

/*
 * Is a value of this type its own key (ordering_resource_key_of() returns
 * the value itself)?  Callers that key many values of one type ask once.
 */
bool
ordering_resource_key_is_value(Oid typid)
{
	Oid			base = getBaseType(typid);

	return base == TEXTOID || base == VARCHAROID;
}

/*
 * The key of a resource value of type typid (see README.md).
 */
text *
ordering_resource_key_of(Datum value, Oid typid)
{
	Oid			base = getBaseType(typid);
	Oid			outfunc;
	bool		isvarlena;
	char	   *out;
	int			nestlevel;

	if (base == TEXTOID || base == VARCHAROID)
		return DatumGetTextPP(value);
	getTypeOutputInfo(typid, &outfunc, &isvarlena);
	if (output_is_fixed(base))
	{
		out = OidOutputFunctionCall(outfunc, value);
		if (base == NUMERICOID)
			trim_fraction(out);
		return cstring_to_text(out);
	}
	check_type(typid);
	if (float_zero(value, base))
		return cstring_to_text("0");

	nestlevel = NewGUCNestLevel();
	for (int i = 0; i < lengthof(fixed_settings); i++)
		(void) set_config_option(fixed_settings[i].name, fixed_settings[i].value,
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	out = OidOutputFunctionCall(outfunc, value);
	AtEOXact_GUC(false, nestlevel);
	return cstring_to_text(out);
}

/*
 * ordering.resource_key(anyelement) returns text: the key of a resource
 * value, as the sequencing trigger computes it.
 */
Datum
ordering_resource_key(PG_FUNCTION_ARGS)
{
	Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, 0);

	if (!OidIsValid(typid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not determine the type of the resource")));
	PG_RETURN_TEXT_P(ordering_resource_key_of(PG_GETARG_DATUM(0), typid));
}

/*
 * ordering_internal.check_resource_type(tbl regclass, resource_column name)
 * returns void: refuses, as the sequencing trigger would at every insert,
 * a resource column whose type's text depends on a setting we do not fix
 * (README.md); for attach().
 */
Datum
ordering_check_resource_type(PG_FUNCTION_ARGS)
{
	ordering_resource_column_check(PG_GETARG_OID(0),
								   NameStr(*PG_GETARG_NAME(1)));
	PG_RETURN_VOID();
}

/*
 * Refuse a resource column that does not exist or whose type's text depends
 * on a setting we do not fix (README.md).
 */
void
ordering_resource_column_check(Oid relid, const char *column)
{
	AttrNumber	attnum = get_attnum(relid, column);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, get_rel_name(relid))));
	check_type(get_atttype(relid, attnum));
}
