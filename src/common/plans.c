/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  SPI plans of the extension's own SQL, prepared once per backend
 *	  (README.md, "SPI plans").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"

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
