/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  SPI plans of the extension's own SQL, prepared once per backend
 *	  (README.md, "SPI plans"), and the rows they return handed on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "utils/tuplestore.h"

#include "plans.h"

/*
 * The kept plan of "sql" in *cache, prepared on first use with the given
 * cursor options (0, or CURSOR_OPT_GENERIC_PLAN when the parameters never
 * change the best plan).  The caller is connected to SPI.
 */
SPIPlanPtr
ordering_prepare_once(SPIPlanPtr *cache, const char *sql, int nargs,
					  Oid *argtypes, int cursor_options)
{
	if (*cache == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, argtypes,
											  cursor_options);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s",
				 sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*cache = plan;
	}
	return *cache;
}

/*
 * Append the rows SPI just returned to a set-returning function's
 * materialized result: the rows' first columns, as many as the result has.
 * The tuplestore copies the values into its own memory.
 */
void
ordering_spi_put_rows(ReturnSetInfo *rsinfo)
{
	int			natts = rsinfo->setDesc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		for (int col = 0; col < natts; col++)
			values[col] = SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, col + 1,
										&nulls[col]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	pfree(values);
	pfree(nulls);
}
