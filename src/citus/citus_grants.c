/*-------------------------------------------------------------------------
 *
 * citus_grants.c
 *	  The privilege sets on every node of a Citus cluster, nodes added
 *	  later included (README.md, "Privilege sets on every node").
 *
 * Citus carries a GRANT on a distributed function to every node, and
 * replays the function's grants on a node it adds; it carries nothing of
 * the extension's own functions, which every node creates with the
 * extension.  So on a coordinator a grant function grants a set's marker,
 * ordering_internal.<set>_set(), a distributed function that is no member
 * of the extension, and every node gives the set itself when a GRANT of a
 * marker runs there.  The state is one flag, set while this backend gives
 * a set and cleared on error too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "citus.h"
#include "plans.h"
#include "process_utility.h"

PG_FUNCTION_INFO_V1(ordering_grant_set_everywhere);

/* The sets, as the grant functions and the markers name them */
static const char *const set_names[] = {"producer", "consumer", "monitor",
"operator"};

#define NUM_SETS lengthof(set_names)

/* True while this backend gives a set on its own node */
static bool giving_set = false;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * The set whose marker function funcid is (its index in set_names), or -1.
 */
static int
marker_set(Oid funcid, Oid *owner)
{
	HeapTuple	tuple;
	Form_pg_proc proc;
	Oid			nsp = get_namespace_oid("ordering_internal", true);
	int			found = -1;

	if (!OidIsValid(funcid) || !OidIsValid(nsp))
		return -1;
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tuple))
		return -1;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->pronamespace == nsp && proc->pronargs == 0)
	{
		for (int i = 0; i < (int) NUM_SETS; i++)
		{
			char		name[NAMEDATALEN];

			snprintf(name, sizeof(name), "%s_set", set_names[i]);
			if (strcmp(NameStr(proc->proname), name) == 0)
				found = i;
		}
	}
	if (found >= 0)
		*owner = proc->proowner;
	ReleaseSysCache(tuple);
	return found;
}

/*
 * The sets whose markers a GRANT statement grants, as a bitmask, and the
 * owner of those markers (grants to him change nothing: Citus replays the
 * owner's own entry of a function's ACL too).
 */
static int
granted_sets(GrantStmt *stmt, Oid *owner)
{
	ListCell   *lc;
	int			sets = 0;

	if (!stmt->is_grant || stmt->targtype != ACL_TARGET_OBJECT ||
		(stmt->objtype != OBJECT_FUNCTION && stmt->objtype != OBJECT_ROUTINE))
		return 0;
	foreach(lc, stmt->objects)
	{
		ObjectWithArgs *func = lfirst_node(ObjectWithArgs, lc);
		int			set = marker_set(LookupFuncWithArgs(stmt->objtype, func,
														true),
									 owner);

		if (set >= 0)
			sets |= 1 << set;
	}
	return sets;
}

/*
 * Give a role a set on this node: the set's grant function, with the flag
 * telling it to stay on this node.
 */
static void
give_set(int set, Oid role)
{
	static SPIPlanPtr plans[NUM_SETS];
	char		sql[64];
	Oid			argtypes[1] = {REGROLEOID};
	Datum		args[1] = {ObjectIdGetDatum(role)};

	snprintf(sql, sizeof(sql), "SELECT ordering.grant_%s($1)", set_names[set]);
	giving_set = true;
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute_plan(ordering_prepare_once(&plans[set], sql, 1,
												   argtypes, 0),
							 args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_plan failed: %s", sql);
		SPI_finish();
	}
	PG_FINALLY();
	{
		giving_set = false;
	}
	PG_END_TRY();
}

/*
 * After a GRANT of a set's marker, give each role it names the set on this
 * node.  A REVOKE of a marker takes nothing away (as no grant function
 * has a revoking twin).
 */
static void
grants_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					  bool readOnlyTree, ProcessUtilityContext context,
					  ParamListInfo params, QueryEnvironment *queryEnv,
					  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	int			sets = 0;
	Oid			owner = InvalidOid;

	if (IsA(stmt, GrantStmt) && !giving_set)
		sets = granted_sets((GrantStmt *) stmt, &owner);
	ordering_process_utility(prev_ProcessUtility, pstmt, queryString,
							 readOnlyTree, context, params, queryEnv, dest, qc);
	if (sets == 0)
		return;
	for (int set = 0; set < (int) NUM_SETS; set++)
	{
		ListCell   *lc;

		if ((sets & (1 << set)) == 0)
			continue;
		foreach(lc, ((GrantStmt *) stmt)->grantees)
		{
			RoleSpec   *grantee = lfirst_node(RoleSpec, lc);
			Oid			role;

			if (grantee->roletype == ROLESPEC_PUBLIC)
				continue;
			role = get_rolespec_oid(grantee, false);
			if (role != owner)
				give_set(set, role);
		}
	}
}

/*
 * Make the marker of a set, an empty function that Citus distributes.  The
 * caller is connected to SPI.
 */
static void
make_marker(const char *set, const char *marker)
{
	char	   *comment = psprintf("Stands for the %s set on every node of the Citus cluster, "
								   "nodes added later included: a GRANT of it, which Citus "
								   "carries to every node, gives the set there "
								   "(ordering.grant_%s); it does nothing",
								   set, set);
	char	   *sql = psprintf("CREATE FUNCTION %s() RETURNS void LANGUAGE sql AS '';"
							   "REVOKE EXECUTE ON FUNCTION %s() FROM PUBLIC;"
							   "COMMENT ON FUNCTION %s() IS %s;"
							   "SELECT pg_catalog.create_distributed_function(%s);",
							   marker, marker, marker, quote_literal_cstr(comment),
							   quote_literal_cstr(psprintf("%s()", marker)));

	if (SPI_execute(sql, false, 0) < 0)
		elog(ERROR, "SPI_execute failed: %s", sql);
}

/*
 * ordering_internal.grant_set_everywhere(set text, role regrole) returns
 * boolean: on the coordinator of a Citus cluster, with Citus's propagation
 * on, grants the role the set's marker (made and distributed first if need
 * be), and so the set on every node, and returns true; elsewhere, while a
 * set is being given here, and inside an extension's script (where the
 * marker would become a member of the extension), returns false: the
 * caller gives the set on this node alone.
 */
Datum
ordering_grant_set_everywhere(PG_FUNCTION_ARGS)
{
	char	   *set = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			role = PG_GETARG_OID(1);
	const char *propagate;
	char	   *name;
	char	   *marker;
	char	   *sql;
	bool		known = false;

	for (int i = 0; i < (int) NUM_SETS; i++)
		known = known || strcmp(set, set_names[i]) == 0;
	if (!known)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown privilege set \"%s\"", set)));
	if (giving_set || creating_extension || !citus_is_coordinator())
		PG_RETURN_BOOL(false);
	propagate = GetConfigOption("citus.enable_ddl_propagation", true, false);
	if (propagate == NULL || strcmp(propagate, "on") != 0)
		PG_RETURN_BOOL(false);

	name = psprintf("%s_set", set);
	marker = psprintf("ordering_internal.%s", quote_identifier(name));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (!SearchSysCacheExists3(PROCNAMEARGSNSP, CStringGetDatum(name),
							   PointerGetDatum(buildoidvector(NULL, 0)),
							   ObjectIdGetDatum(get_namespace_oid("ordering_internal",
																  false))))
		make_marker(set, marker);
	sql = psprintf("GRANT EXECUTE ON FUNCTION %s() TO %s", marker,
				   quote_identifier(GetUserNameFromId(role, false)));
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute failed: %s", sql);
	SPI_finish();
	PG_RETURN_BOOL(true);
}

/*
 * Install the hook (from _PG_init, whether or not the library is
 * preloaded).
 */
void
citus_grants_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = grants_ProcessUtility;
}
