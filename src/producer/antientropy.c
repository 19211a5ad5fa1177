/*-------------------------------------------------------------------------
 *
 * antientropy.c
 *	  The two hashes of reconciliation, ordering_internal.resource_bucket()
 *	  and ordering_internal.resource_fingerprint(), defined on bytes
 *	  (README.md, "Reconciliation's hashes").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "compat.h"
#include "sha256.h"

PG_FUNCTION_INFO_V1(ordering_resource_bucket);
PG_FUNCTION_INFO_V1(ordering_resource_fingerprint);

/* Resource ids up to this many bytes are hashed from a stack buffer */
#define SMALL_ID 1024

/*
 * The UTF-8 bytes of a resource id; *len gets their count.  Points into the
 * text itself unless a conversion was needed.
 */
static const unsigned char *
resource_bytes(text *resource, size_t *len)
{
	const char *s = VARDATA_ANY(resource);
	int			n = VARSIZE_ANY_EXHDR(resource);
	const char *u;

	if (GetDatabaseEncoding() == PG_UTF8 || GetDatabaseEncoding() == PG_SQL_ASCII)
	{
		*len = n;
		return (const unsigned char *) s;
	}
	u = pg_server_to_any(s, n, PG_UTF8);
	*len = (u == s) ? (size_t) n : strlen(u);
	return (const unsigned char *) u;
}

/*
 * ordering_internal.resource_bucket(resource_id text, buckets integer)
 *		returns integer
 *
 * The bucket, 0 .. buckets - 1, of a resource (README.md).
 */
Datum
ordering_resource_bucket(PG_FUNCTION_ARGS)
{
	text	   *resource = PG_GETARG_TEXT_PP(0);
	int32		buckets = PG_GETARG_INT32(1);
	unsigned char digest[ORDERING_SHA256_LEN];
	const unsigned char *bytes;
	size_t		len;
	uint64		h;

	if (buckets < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buckets must be at least 1, got %d", buckets)));
	bytes = resource_bytes(resource, &len);
	ordering_sha256(bytes, len, digest);
	h = ((uint64) digest[0] << 24) | ((uint64) digest[1] << 16) |
		((uint64) digest[2] << 8) | (uint64) digest[3];
	PG_RETURN_INT32((int32) ((h * (uint64) buckets) >> 32));
}

/*
 * ordering_internal.resource_fingerprint(resource_id text, seq bigint)
 *		returns bigint
 *
 * The 64-bit hash of a (resource, seq) pair (README.md); a bucket's
 * summary is the bit_xor() of the fingerprints of its resources.
 */
Datum
ordering_resource_fingerprint(PG_FUNCTION_ARGS)
{
	text	   *resource = PG_GETARG_TEXT_PP(0);
	uint64		seq = (uint64) PG_GETARG_INT64(1);
	unsigned char small[SMALL_ID + 8];
	unsigned char *buf = small;
	unsigned char digest[ORDERING_SHA256_LEN];
	const unsigned char *bytes;
	size_t		len;
	uint64		f = 0;

	bytes = resource_bytes(resource, &len);
	if (len > SMALL_ID)
		buf = palloc(len + 8);
	memcpy(buf, bytes, len);
	for (int i = 0; i < 8; i++)
		buf[len + i] = (unsigned char) (seq >> (56 - 8 * i));
	ordering_sha256(buf, len + 8, digest);
	for (int i = 0; i < 8; i++)
		f = (f << 8) | digest[i];
	PG_RETURN_INT64((int64) f);
}
