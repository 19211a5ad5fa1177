/*-------------------------------------------------------------------------
 *
 * held_counters.c
 *	  The counters a running statement holds in backend memory, so that a
 *	  statement writes each counter once (README.md, "Counters a statement
 *	  holds").  It neither reads nor writes a table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "compat.h"
#include "producer.h"

/* A held counter's key */
typedef struct HeldKey
{
	Oid			relid;
	uint32		hash;
	text	   *stream;
	text	   *resource;
} HeldKey;

/* A held counter: its key, its place in a list, and the counter */
typedef struct HeldEntry
{
	HeldKey		key;
	dlist_node	node;			/* in its statement's list, or the orphans' */
	HeldCounter data;
} HeldEntry;

/*
 * The hash table (lib/simplehash.h): slots point to the entries, which
 * never move.
 */
typedef struct HeldSlot
{
	HeldKey    *key;			/* &entry->key */
	uint32		hash;
	char		status;
} HeldSlot;

/*
 * Do two keys of the same hash name the same counter?
 */
static inline bool
held_key_equal(const HeldKey *a, const HeldKey *b)
{
	return a->relid == b->relid &&
		VARSIZE_ANY_EXHDR(a->resource) == VARSIZE_ANY_EXHDR(b->resource) &&
		memcmp(VARDATA_ANY(a->resource), VARDATA_ANY(b->resource),
			   VARSIZE_ANY_EXHDR(a->resource)) == 0 &&
		VARSIZE_ANY_EXHDR(a->stream) == VARSIZE_ANY_EXHDR(b->stream) &&
		memcmp(VARDATA_ANY(a->stream), VARDATA_ANY(b->stream),
			   VARSIZE_ANY_EXHDR(a->stream)) == 0;
}

#define SH_PREFIX heldtab
#define SH_ELEMENT_TYPE HeldSlot
#define SH_KEY_TYPE HeldKey *
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ((k)->hash)
#define SH_EQUAL(tb, a, b) held_key_equal(a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* What a subtransaction below created_subid did to a counter */
typedef struct HeldUndo
{
	SubTransactionId subid;		/* the subtransaction that changed it */
	SubTransactionId prev_subid;	/* the one that had changed it before */
	CommandId	prev_cid;
	int64		last_before;
	HeldEntry  *entry;
} HeldUndo;

/* A statement running at some depth */
typedef struct HeldStatement
{
	bool		bulk;			/* may hold counters */
	dlist_head	held;
} HeldStatement;

int			held_count = 0;

static MemoryContext held_cxt = NULL;	/* the hash table, the log */
static MemoryContext entries_cxt = NULL;	/* the entries (its child) */
static heldtab_hash *held_hash = NULL;

static HeldUndo *undo_log = NULL;
static int	undo_n = 0;
static int	undo_max = 0;

static HeldStatement *statements = NULL;	/* [1 .. depth] */
static int	depth = 0;
static int	depth_max = 0;

static dlist_head orphans = DLIST_STATIC_INIT(orphans);

/*
 * The hash of a key (held_find() hands it out for held_add()).  The rows
 * of a statement share their stream: its hash is remembered.
 */
static uint32
held_key_hash(Oid relid, text *stream, text *resource)
{
	static Oid	last_relid = InvalidOid;
	static char last_stream[NAMEDATALEN * 2 + 2];
	static int	last_len = -1;
	static uint32 last_hash;
	int			len = VARSIZE_ANY_EXHDR(stream);

	if (relid != last_relid || len != last_len ||
		memcmp(VARDATA_ANY(stream), last_stream, len) != 0)
	{
		last_hash = hash_combine(hash_bytes((const unsigned char *) VARDATA_ANY(stream),
											len), relid);
		last_relid = relid;
		last_len = len <= sizeof(last_stream) ? len : -1;
		if (last_len >= 0)
			memcpy(last_stream, VARDATA_ANY(stream), len);
	}
	return hash_combine(last_hash,
						hash_bytes((const unsigned char *) VARDATA_ANY(resource),
								   VARSIZE_ANY_EXHDR(resource)));
}

/*
 * The counter held for a key, or NULL; *hash is the key's hash, which
 * held_add() takes, so that a request hashes its key once.
 */
HeldCounter *
held_find(Oid relid, text *stream, text *resource, uint32 *hash)
{
	HeldKey		key = {relid, 0, stream, resource};
	HeldSlot   *slot;

	*hash = key.hash = held_key_hash(relid, stream, resource);
	if (held_count == 0)
		return NULL;
	slot = heldtab_lookup_hash(held_hash, &key, *hash);
	if (slot == NULL)
		return NULL;
	/* slot->key is &entry->key */
	return &((HeldEntry *) ((char *) slot->key -
							offsetof(HeldEntry, key)))->data;
}

/*
 * The counter held for (stream, resource) in any counter table, or NULL:
 * for a caller that cannot name the counter table (citus_counters.c's next_sequence()
 * of a distributed stream knows the distributed table, the trigger its
 * shard).  A resource of a stream has one counter table at a time, so at
 * most one matches.  A walk over every held counter: only for such callers.
 */
HeldCounter *
held_find_any(text *stream, text *resource)
{
	heldtab_iterator iter;
	HeldSlot   *slot;

	if (held_count == 0)
		return NULL;
	heldtab_start_iterate(held_hash, &iter);
	while ((slot = heldtab_iterate(held_hash, &iter)) != NULL)
	{
		HeldKey		key = *slot->key;

		key.stream = stream;
		key.resource = resource;
		if (held_key_equal(slot->key, &key))
			return &((HeldEntry *) ((char *) slot->key -
									offsetof(HeldEntry, key)))->data;
	}
	return NULL;
}

/*
 * The entry of a list node (dlist_container() without its type check, whose
 * NULL cppcheck takes for a dereference).
 */
static inline HeldEntry *
entry_of_node(dlist_node *node)
{
	return (HeldEntry *) ((char *) node - offsetof(HeldEntry, node));
}

/*
 * The entry of a counter.
 */
static inline HeldEntry *
entry_of(HeldCounter *pc)
{
	return (HeldEntry *) ((char *) pc - offsetof(HeldEntry, data));
}

/*
 * Does the running statement hold counters (README.md)?
 */
bool
held_statement_is_bulk(void)
{
	return depth > 0 && statements[depth].bulk;
}

/*
 * Hold the counter of a key for the running statement, its row having just
 * been written with "value" by the current subtransaction.  NULL, holding
 * nothing, when the statement holds no counters or all the memory it may
 * already (README.md).
 */
HeldCounter *
held_add(Oid relid, text *stream, text *resource, uint32 hash, int64 value)
{
	HeldEntry  *entry;
	HeldCounter *pc;
	HeldSlot   *slot;
	Size		slen = VARSIZE_ANY(stream);
	Size		rlen = VARSIZE_ANY(resource);
	bool		found;

	if (!held_statement_is_bulk())
		return NULL;
	if (held_cxt == NULL)
	{
		held_cxt = AllocSetContextCreate(TopTransactionContext,
										 "ordering statement counters",
										 ALLOCSET_DEFAULT_MINSIZE,
										 (Size) ALLOCSET_DEFAULT_INITSIZE,
										 (Size) ALLOCSET_DEFAULT_MAXSIZE);
		/* entries of all sizes, packed (they are freed together, mostly) */
		entries_cxt = GenerationContextCreate(held_cxt,
											  "ordering statement counter entries",
											  ALLOCSET_DEFAULT_MINSIZE,
											  (Size) ALLOCSET_DEFAULT_INITSIZE,
											  (Size) ALLOCSET_DEFAULT_MAXSIZE);
		held_hash = heldtab_create(held_cxt, 256, NULL);
	}
	else if (MemoryContextMemAllocated(held_cxt, true) >
			 get_hash_memory_limit())
		return NULL;

	/* the entry and copies of its key in one chunk */
	entry = MemoryContextAlloc(entries_cxt, MAXALIGN(sizeof(HeldEntry)) +
							   INTALIGN(slen) + rlen);
	entry->key.relid = relid;
	entry->key.hash = hash;
	entry->key.stream = (text *) ((char *) entry + MAXALIGN(sizeof(HeldEntry)));
	entry->key.resource = (text *) ((char *) entry->key.stream + INTALIGN(slen));
	memcpy(entry->key.stream, stream, slen);
	memcpy(entry->key.resource, resource, rlen);
	slot = heldtab_insert_hash(held_hash, &entry->key, hash, &found);
	Assert(!found);
	slot->key = &entry->key;

	pc = &entry->data;
	pc->relid = relid;
	pc->hash = hash;
	pc->stream = entry->key.stream;
	pc->resource = entry->key.resource;
	pc->last = pc->written = value;
	pc->created_subid = pc->changed_subid = GetCurrentSubTransactionId();
	pc->changed_cid = GetCurrentCommandId(true);
	pc->stored = 0;
	pc->owner = depth;
	dlist_push_head(&statements[depth].held, &entry->node);
	held_count++;
	return pc;
}

/*
 * Set a held counter to "value", logging the value before for a
 * subtransaction below the one that holds it (README.md).
 */
void
held_set(HeldCounter *pc, int64 value)
{
	SubTransactionId subid = GetCurrentSubTransactionId();

	if (subid != pc->changed_subid)
	{
		HeldUndo   *u;

		/* changed_subid is open: the current one or one of its parents */
		Assert(subid > pc->changed_subid);
		if (undo_n == undo_max)
		{
			int			newmax = Max(16, undo_max * 2);

			undo_log = undo_log == NULL ?
				MemoryContextAlloc(held_cxt, newmax * sizeof(HeldUndo)) :
				repalloc(undo_log, newmax * sizeof(HeldUndo));
			undo_max = newmax;
		}
		u = &undo_log[undo_n++];
		u->subid = subid;
		u->prev_subid = pc->changed_subid;
		u->prev_cid = pc->changed_cid;
		u->last_before = pc->last;
		u->entry = entry_of(pc);
		pc->changed_subid = subid;
	}
	pc->last = value;
	pc->changed_cid = GetCurrentCommandId(true);
}

/*
 * Stop holding a counter (written, or rolled back): it leaves its list and
 * the hash.  No log entry refers to it: those are for subtransactions below
 * created_subid, and the caller is in created_subid (or rolling it back).
 */
void
held_forget(HeldCounter *pc)
{
	HeldEntry  *entry = entry_of(pc);
	HeldSlot   *slot;

	dlist_delete(&entry->node);
	slot = heldtab_lookup_hash(held_hash, &entry->key, entry->key.hash);
	Assert(slot != NULL && slot->key == &entry->key);
	heldtab_delete_item(held_hash, slot);
	pfree(entry);
	held_count--;
}

/*
 * A statement begins; "bulk" if it may hold counters (README.md).
 */
void
held_statement_begin(bool bulk)
{
	if (depth + 1 >= depth_max)
	{
		int			newmax = Max(8, depth_max * 2);

		statements = statements == NULL ?
			MemoryContextAlloc(TopMemoryContext, newmax * sizeof(HeldStatement)) :
			repalloc(statements, newmax * sizeof(HeldStatement));
		depth_max = newmax;
	}
	depth++;
	statements[depth].bulk = bulk;
	dlist_init(&statements[depth].held);
}

/*
 * A counter the ending statement holds, to write and then forget; NULL when
 * none is left.  A counter held in another subtransaction than the current
 * one (never expected: a statement runs in one) is orphaned instead, to be
 * written in its own.
 */
HeldCounter *
held_statement_take(void)
{
	dlist_head *held = &statements[depth].held;

	while (!dlist_is_empty(held))
	{
		HeldEntry  *entry = entry_of_node(dlist_head_node(held));

		if (entry->data.created_subid == GetCurrentSubTransactionId())
			return &entry->data;
		/* never expected (see above): written in its own, as an orphan */
		dlist_delete(&entry->node);
		entry->data.owner = 0;
		dlist_push_tail(&orphans, &entry->node);
	}
	return NULL;
}

/*
 * The statement ended and wrote its counters.
 */
void
held_statement_end(void)
{
	Assert(depth > 0 && dlist_is_empty(&statements[depth].held));
	depth--;
}

/*
 * The statement failed: its counters are orphaned (README.md).
 */
void
held_statement_abandon(void)
{
	dlist_mutable_iter iter;

	Assert(depth > 0);
	dlist_foreach_modify(iter, &statements[depth].held)
	{
		HeldEntry  *entry = entry_of_node(iter.cur);

		dlist_delete(&entry->node);
		entry->data.owner = 0;
		dlist_push_tail(&orphans, &entry->node);
	}
	depth--;
}

/*
 * An orphaned counter of the current subtransaction, to write and then
 * forget; NULL if there is none.
 */
HeldCounter *
held_orphan_take(void)
{
	dlist_iter	iter;

	dlist_foreach(iter, &orphans)
	{
		HeldEntry  *entry = entry_of_node(iter.cur);

		if (entry->data.created_subid == GetCurrentSubTransactionId())
			return &entry->data;
	}
	return NULL;
}

/*
 * A subtransaction ends.  Rolled back: undo what it did to counters held
 * above it, and discard the orphans it holds (a statement's counters are
 * orphaned before the rollback, when the error leaves the statement).
 * Committed: its log entries and orphans pass to its parent.
 */
static void
held_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	dlist_mutable_iter iter;

	if (held_count == 0)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		while (undo_n > 0 && undo_log[undo_n - 1].subid >= mySubid)
		{
			HeldUndo   *u = &undo_log[--undo_n];
			HeldCounter *pc = &u->entry->data;

			pc->last = u->last_before;
			pc->changed_subid = u->prev_subid;
			pc->changed_cid = u->prev_cid;
		}
		dlist_foreach_modify(iter, &orphans)
		{
			HeldEntry  *entry = entry_of_node(iter.cur);

			if (entry->data.created_subid >= mySubid)
				held_forget(&entry->data);
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		int			kept = undo_n;

		/* its entries are on top: those of its children were resolved */
		while (kept > 0 && undo_log[kept - 1].subid == mySubid)
			kept--;
		for (int i = kept; i < undo_n; i++)
		{
			HeldUndo   *u = &undo_log[i];
			HeldCounter *pc = &u->entry->data;

			pc->changed_subid = parentSubid;
			/* the parent's own entry (or the counter's creation) covers it */
			if (u->prev_subid == parentSubid)
				continue;
			u->subid = parentSubid;
			undo_log[kept++] = *u;
		}
		undo_n = kept;
		dlist_foreach_modify(iter, &orphans)
		{
			HeldEntry  *entry = entry_of_node(iter.cur);

			if (entry->data.created_subid == mySubid)
				entry->data.created_subid = parentSubid;
		}
	}
}

/*
 * The transaction ends: its memory went with TopTransactionContext.
 */
static void
held_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			held_cxt = entries_cxt = NULL;
			held_hash = NULL;
			held_count = 0;
			undo_log = NULL;
			undo_n = undo_max = 0;
			dlist_init(&orphans);
			for (int i = 1; i <= depth; i++)
				dlist_init(&statements[i].held);
			break;
		default:
			break;
	}
}

/*
 * Register the callbacks (from _PG_init).
 */
void
held_init(void)
{
	RegisterXactCallback(held_xact_callback, NULL);
	RegisterSubXactCallback(held_subxact_callback, NULL);
}
