/*-------------------------------------------------------------------------
 *
 * sha256.h
 *	  SHA-256 of a short byte string, for hashing resource ids the same way
 *	  on every platform and PostgreSQL version.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_SHA256_H
#define ORDERING_SHA256_H

#define ORDERING_SHA256_LEN 32

/* digest = SHA-256(data[0 .. len - 1]), FIPS 180-4 */
extern void ordering_sha256(const unsigned char *data, size_t len,
							unsigned char digest[ORDERING_SHA256_LEN]);

#endif							/* ORDERING_SHA256_H */
