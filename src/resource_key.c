/*-------------------------------------------------------------------------
 *
 * resource_key.c
 *	  The text a resource of any type is keyed by: the same in every
 *	  session, whatever its settings.
 *
 * Counters are keyed by (stream, resource text).  For text and varchar the
 * text is the value.  For any other type it is the type's output, and the
 * output of many types depends on session settings: a date is 2026-11-30
 * under DateStyle ISO and 30/11/2026 under SQL, DMY; a timestamptz depends on
 * TimeZone, a float on extra_float_digits, a bytea on bytea_output, an
 * interval on IntervalStyle.  Two sessions would then count one resource
 * twice.  So every type whose output might depend on a setting is printed
 * under fixed settings: DateStyle ISO, YMD; IntervalStyle postgres; TimeZone
 * UTC; extra_float_digits 1 (the shortest exact form); bytea_output hex.
 * Those are the defaults of a fresh installation (TimeZone aside), so a
 * database that always used the defaults keeps its keys.  Types known to
 * print the same everywhere (integers, numeric, uuid, boolean, the text
 * types, enums) skip the settings, which cost a few microseconds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "resource_key.h"

PG_FUNCTION_INFO_V1(ordering_resource_key);

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
 * The key of a resource value of type typid (see the file header).
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
		return cstring_to_text(OidOutputFunctionCall(outfunc, value));

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
