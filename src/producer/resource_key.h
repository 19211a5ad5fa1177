/*-------------------------------------------------------------------------
 *
 * resource_key.h
 *	  The text a resource of any type is keyed by.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_RESOURCE_KEY_H
#define ORDERING_RESOURCE_KEY_H

extern text *ordering_resource_key_of(Datum value, Oid typid);
extern bool ordering_resource_key_is_value(Oid typid);
extern void ordering_resource_column_check(Oid relid, const char *column);

#endif							/* ORDERING_RESOURCE_KEY_H */
