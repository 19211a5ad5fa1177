/*-------------------------------------------------------------------------
 *
 * stats_prepared.c
 *	  Where the counts of a transaction prepared for two-phase commit wait
 *	  for its COMMIT PREPARED: a file per GID (README.md, "Prepared
 *	  transactions").
 *
 * PostgreSQL's own statistics carry a prepared transaction's counts in a
 * two-phase record (RegisterTwoPhaseRecord(TWOPHASE_RM_PGSTAT_ID, ...)),
 * but the resource managers of twophase_rmgr.h are a fixed table with no
 * slot for an extension.  So the counts go into a file of their own, named
 * after the GID, in pg_stat/ (which PostgreSQL keeps across restarts and
 * crashes, as pg_stat_statements' file).  stats.c writes it when the
 * transaction is prepared and takes it back when COMMIT or ROLLBACK
 * PREPARED has finished it.  The file is not fsync'ed, as PostgreSQL's own
 * statistics are not (it discards them after a crash): an operating system
 * crash may lose it (statistics undercount, never count twice).  A file
 * whose transaction ended without taking it back (COMMIT PREPARED where
 * the library was not loaded, or a crash between the end and the removal)
 * is removed by the gap sweeper of its database
 * (stats_prepared_forget_orphans()).
 *
 * Nothing here raises an error: it runs once the transaction is prepared
 * or committed; what cannot be written or read is reported with a WARNING
 * and not counted.  No lock: a GID is prepared once, and COMMIT or
 * ROLLBACK PREPARED of it runs in one session at a time (PostgreSQL locks
 * the prepared transaction), after its PREPARE returned.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "stats.h"
#include "stats_prepared.h"

/* Where the files are, relative to the data directory, and their name */
#define PREPARED_DIR		"pg_stat"
#define PREPARED_PREFIX		"ordering_prepared_"

/* The largest record read back (a transaction of many resources) */
#define PREPARED_MAX_BYTES	((off_t) 64 * 1024 * 1024)

/*
 * The file of a GID: its name holds a 64-bit hash of it, and the file
 * starts with the GID itself, which is compared before the file is trusted.
 */
static void
prepared_path(const char *gid, char *path)
{
	uint64		hash = hash_bytes_extended((const unsigned char *) gid,
										   strlen(gid), 0);

	snprintf(path, MAXPGPATH, PREPARED_DIR "/" PREPARED_PREFIX "%016llx",
			 (unsigned long long) hash);
}

/*
 * Write n bytes to fd; false with errno set on failure.
 */
static bool
write_all(int fd, const char *data, Size n)
{
	while (n > 0)
	{
		ssize_t		done = write(fd, data, n);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
		{
			if (done == 0)
				errno = ENOSPC;
			return false;
		}
		data += done;
		n -= done;
	}
	return true;
}

/*
 * Keep the counts of a transaction prepared under "gid" (stats.c's record
 * of "len" bytes).  Called in the XACT_EVENT_PREPARE callback: never
 * raises.
 */
void
stats_prepared_keep(const char *prepared_gid, const char *record, Size len)
{
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	char		gid[GIDSIZE] = {0};
	int			fd;
	bool		ok;

	strlcpy(gid, prepared_gid, sizeof(gid));
	prepared_path(gid, path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\", the ordering statistics of prepared transaction \"%s\" are lost: %m",
						tmp, gid)));
		return;
	}
	ok = write_all(fd, gid, sizeof(gid)) && write_all(fd, record, len);
	if (!ok)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\", the ordering statistics of prepared transaction \"%s\" are lost: %m",
						tmp, gid)));
	if (CloseTransientFile(fd) != 0 && ok)
	{
		ok = false;
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tmp)));
	}
	if (ok && rename(tmp, path) != 0)
	{
		ok = false;
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not rename file \"%s\" to \"%s\": %m",
						tmp, path)));
	}
	if (!ok)
		(void) unlink(tmp);
}

/*
 * Read the file of a GID into palloc'd memory: the record after the GID,
 * its length in *len.  NULL when there is none (the transaction counted
 * nothing), or it is not the GID's (a hash collision: left alone), or it
 * cannot be read (a WARNING; *remove says whether to remove it).
 */
static char *
prepared_read(const char *gid, const char *path, Size *len, bool *remove)
{
	char		stored[GIDSIZE];
	const PreparedCountsHeader *hdr;
	struct stat st;
	char	   *data;
	int			fd;
	ssize_t		got;

	*remove = false;
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || st.st_size < (off_t) (GIDSIZE + sizeof(PreparedCountsHeader)) ||
		st.st_size > PREPARED_MAX_BYTES)
	{
		CloseTransientFile(fd);
		*remove = true;
		ereport(WARNING,
				(errmsg("file \"%s\" is not the ordering statistics of a prepared transaction", path)));
		return NULL;
	}
	data = palloc(st.st_size);
	got = read(fd, data, st.st_size);
	CloseTransientFile(fd);
	if (got != st.st_size)
	{
		pfree(data);
		*remove = true;
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
		return NULL;
	}
	memcpy(stored, data, GIDSIZE);
	stored[GIDSIZE - 1] = '\0';
	if (strcmp(stored, gid) != 0)
	{
		pfree(data);
		return NULL;
	}
	*remove = true;
	hdr = (const PreparedCountsHeader *) (data + GIDSIZE);
	*len = st.st_size - GIDSIZE;
	if (hdr->magic != PREPARED_COUNTS_MAGIC || hdr->entries < 0 || hdr->hot < 0 ||
		*len != PREPARED_COUNTS_SIZE(hdr->entries, hdr->hot))
	{
		pfree(data);
		ereport(WARNING,
				(errmsg("file \"%s\" is not the ordering statistics of a prepared transaction", path)));
		return NULL;
	}
	if (hdr->dbid != MyDatabaseId)
	{
		pfree(data);
		return NULL;
	}
	return data;
}

/*
 * Take back the counts kept under a GID that COMMIT PREPARED or ROLLBACK
 * PREPARED finished: the record (palloc'd, its length in *len), or NULL
 * when there is none of this database.  The file is removed.
 */
char *
stats_prepared_take(const char *gid, Size *len)
{
	char		path[MAXPGPATH];
	char	   *data;
	char	   *record = NULL;
	bool		remove;

	*len = 0;
	prepared_path(gid, path);
	data = prepared_read(gid, path, len, &remove);
	if (data != NULL)
	{
		record = palloc(*len);
		memcpy(record, data + GIDSIZE, *len);
		pfree(data);
	}
	if (remove && unlink(path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
	return record;
}

/*
 * The GID and database of a file, from its first bytes; false if it holds
 * neither (being written, or not ours).
 */
static bool
prepared_owner(const char *path, char *gid, Oid *dbid)
{
	char		head[GIDSIZE + sizeof(PreparedCountsHeader)];
	PreparedCountsHeader hdr;
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	ssize_t		got;

	if (fd < 0)
		return false;
	got = read(fd, head, sizeof(head));
	CloseTransientFile(fd);
	if (got != (ssize_t) sizeof(head))
		return false;
	memcpy(gid, head, GIDSIZE);
	gid[GIDSIZE - 1] = '\0';
	memcpy(&hdr, head + GIDSIZE, sizeof(hdr));
	*dbid = hdr.dbid;
	return hdr.magic == PREPARED_COUNTS_MAGIC;
}

/* The files found orphaned by the previous call, in TopMemoryContext */
static List *orphans_seen = NIL;

/*
 * Is "name" one of "names"?
 */
static bool
name_listed(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	}
	return false;
}

/*
 * Does pg_stat/ hold a file of ours (one of any database, or a temporary
 * one)?  A directory read, far cheaper than asking which transactions are
 * prepared, which the caller then need not do.  Finding none, it forgets
 * the files found orphaned before: gone, and a file of the same name
 * written later is a new one, to be found orphaned twice like any other.
 * Never raises.
 */
bool
stats_prepared_any_file(void)
{
	DIR		   *dir = AllocateDir(PREPARED_DIR);
	struct dirent *de;
	bool		found = false;

	while (!found && (de = ReadDirExtended(dir, PREPARED_DIR, LOG)) != NULL)
		found = strncmp(de->d_name, PREPARED_PREFIX,
						strlen(PREPARED_PREFIX)) == 0;
	FreeDir(dir);
	if (!found)
	{
		list_free_deep(orphans_seen);
		orphans_seen = NIL;
	}
	return found;
}

/*
 * Remove the files of this database whose GID is not "prepared" (the GIDs
 * of the transactions prepared now, read after the caller's snapshot),
 * and the temporary files left by a PREPARE that stopped half-way.  A
 * COMMIT PREPARED takes its file back just after its transaction ended,
 * so a file is removed only when two calls in a row found it orphaned:
 * the gap sweeper calls this once per sweep, ordering.sweep_interval
 * apart.  Never raises.
 */
void
stats_prepared_forget_orphans(List *prepared)
{
	DIR		   *dir = AllocateDir(PREPARED_DIR);
	struct dirent *de;
	List	   *orphans = NIL;
	MemoryContext old;

	while ((de = ReadDirExtended(dir, PREPARED_DIR, LOG)) != NULL)
	{
		char		path[MAXPGPATH];
		char		gid[GIDSIZE];
		Oid			dbid;
		bool		temporary = strstr(de->d_name, ".tmp") != NULL;

		if (strncmp(de->d_name, PREPARED_PREFIX, strlen(PREPARED_PREFIX)) != 0)
			continue;
		snprintf(path, sizeof(path), PREPARED_DIR "/%s", de->d_name);
		if (!temporary &&
			(!prepared_owner(path, gid, &dbid) || dbid != MyDatabaseId ||
			 name_listed(prepared, gid)))
			continue;
		if (!name_listed(orphans_seen, de->d_name))
		{
			old = MemoryContextSwitchTo(TopMemoryContext);
			orphans = lappend(orphans, pstrdup(de->d_name));
			MemoryContextSwitchTo(old);
		}
		else if (unlink(path) == 0)
			ereport(LOG,
					(errmsg("removed file \"%s\": the ordering statistics of a transaction no longer prepared",
							path)));
	}
	FreeDir(dir);
	list_free_deep(orphans_seen);
	orphans_seen = orphans;
}
