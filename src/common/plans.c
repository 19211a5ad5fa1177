/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  SPI plans of the extension's own SQL, prepared once per backend.
 *
 * The statements the C code runs through SPI (gaps.c, parked.c, worker.c)
 * are fixed strings, fully schema-qualified, so each is parsed and planned
 * on first use and kept (SPI_keepplan) for the life of the backend; plan
 * invalidation replans a kept plan when the objects under it change.
 *
 * Layer: the ground: it calls nothing of the extension.
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
