/*-------------------------------------------------------------------------
 *
 * protect.c
 *	  The event trigger that refuses, when they are made, the ALTER TABLE
 *	  commands that would break the extension's tables (README.md,
 *	  "Protected tables").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(ordering_protect_tables);

/*
 * Is "rv" a table of the extension (a member of it, in schema ordering)?
 * Its OID in *relid.
 */
static bool
own_table(RangeVar *rv, Oid *relid)
{
	Oid			nspid;
	Oid			extid;

	if (rv == NULL)
		return false;
	*relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(*relid))
		return false;
	nspid = get_namespace_oid("ordering", true);
	if (!OidIsValid(nspid) || get_rel_namespace(*relid) != nspid)
		return false;
	extid = get_extension_oid("ordering", true);
	return OidIsValid(extid) &&
		getExtensionOfObject(RelationRelationId, *relid) == extid;
}

/*
 * The table's name as messages show it.
 */
static char *
table_name(Oid relid)
{
	return psprintf("\"ordering.%s\"", get_rel_name(relid));
}

/*
 * Refuse a change of a table of the extension (README.md); "what" says
 * what it would have done.
 */
static void
refuse(Oid relid, const char *what)
{
	bool		outbox = strcmp(get_rel_name(relid), "outbox") == 0;

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s", what),
			 errdetail("The table belongs to the extension ordering, which relies on it being logged and having the columns CREATE EXTENSION made; a dump would not carry the change either."),
			 outbox ?
			 errhint("For events with other columns, create an outbox table of your own and attach it with ordering.attach().") :
			 errhint("Keep data of your own in a table of your own.")));
}

/*
 * What an ALTER TABLE subcommand on table "relid" would do that breaks a
 * promise (README.md), or NULL.
 */
static char *
refused_subcommand(AlterTableCmd *cmd, Oid relid)
{
	switch (cmd->subtype)
	{
		case AT_SetUnLogged:
			return psprintf("make table %s unlogged", table_name(relid));
		case AT_AddColumn:
			return psprintf("add a column to table %s", table_name(relid));
		case AT_DropColumn:
			return psprintf("drop a column of table %s", table_name(relid));
		case AT_AlterColumnType:
			return psprintf("change the type of a column of table %s",
							table_name(relid));
		case AT_SetNotNull:
		case AT_DropNotNull:
			return psprintf("change NOT NULL of a column of table %s",
							table_name(relid));
		case AT_SetAccessMethod:
			return psprintf("change the access method of table %s",
							table_name(relid));
		case AT_AddInherit:
			return psprintf("make table %s an inheritance child",
							table_name(relid));
		default:
			return NULL;
	}
}

/*
 * ALTER TABLE: refuse the subcommands that break a promise (README.md) on
 * a table of ours, and attaching one of ours as a partition of another
 * table.
 */
static void
check_alter_table(AlterTableStmt *stmt)
{
	Oid			relid;
	bool		ours = own_table(stmt->relation, &relid);
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		char	   *what;
		Oid			partition;

		if (cmd->subtype == AT_AttachPartition &&
			own_table(((PartitionCmd *) cmd->def)->name, &partition))
			refuse(partition, psprintf("make table %s a partition of another table",
									   table_name(partition)));
		if (!ours)
			continue;
		what = refused_subcommand(cmd, relid);
		if (what != NULL)
			refuse(relid, what);
	}
}

/*
 * ordering_internal.protect_tables(): the event trigger
 * ordering_protect_tables, ddl_command_start of ALTER TABLE: refuses the
 * commands that would break a table of ours (README.md).
 */
Datum
ordering_protect_tables(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Node	   *parsetree;
	Oid			relid;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("ordering_internal.protect_tables() was not called by the event trigger manager")));
	if (creating_extension || IsBinaryUpgrade)
		PG_RETURN_VOID();
	trigdata = (EventTriggerData *) fcinfo->context;
	parsetree = trigdata->parsetree;
	switch (nodeTag(parsetree))
	{
		case T_AlterTableStmt:
			check_alter_table((AlterTableStmt *) parsetree);
			break;
		case T_RenameStmt:
			{
				RenameStmt *stmt = (RenameStmt *) parsetree;

				if ((stmt->renameType == OBJECT_TABLE ||
					 stmt->renameType == OBJECT_COLUMN) &&
					own_table(stmt->relation, &relid))
					refuse(relid, psprintf(stmt->renameType == OBJECT_TABLE ?
										   "rename table %s" :
										   "rename a column of table %s",
										   table_name(relid)));
				break;
			}
		case T_AlterObjectSchemaStmt:
			{
				AlterObjectSchemaStmt *stmt = (AlterObjectSchemaStmt *) parsetree;

				if (stmt->objectType == OBJECT_TABLE &&
					own_table(stmt->relation, &relid))
					refuse(relid, psprintf("move table %s to another schema",
										   table_name(relid)));
				break;
			}
		default:
			break;
	}
	PG_RETURN_VOID();
}
