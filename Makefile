# PGXS build of the ordering extension.
#
# Regression tests live in sql/ + expected/ (pg_regress), isolation specs in
# test/specs with their expected outputs in expected/ too (as contrib keeps
# them), TAP tests in test/t.  All of them run on their
# own throwaway servers because they need shared_preload_libraries; see
# test/run.sh for the one command that installs, builds and runs everything.

EXTENSION = ordering
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" ordering.control)

MODULE_big = ordering
# src/ holds one folder per subsystem, from the top down (src/README.md):
# the module entry point, then the producer, the consumers and the gap
# sweep, then the Citus seams, the statistics and the storage layer, then
# what every folder uses.  Each folder is on the include path: a file
# includes a header by its name, and test/lint.sh checks which folder may
# include which.
ORDERING_SRC_DIRS = producer consumer gaps citus stats storage common
OBJS = \
	src/ordering.o \
	src/producer/sequencing.o \
	src/producer/statement.o \
	src/producer/provisional.o \
	src/producer/counters.o \
	src/producer/held_counters.o \
	src/producer/attached.o \
	src/producer/registry.o \
	src/producer/restore.o \
	src/producer/resource_key.o \
	src/producer/wakeup.o \
	src/producer/standbys.o \
	src/producer/antientropy.o \
	src/consumer/decisions.o \
	src/consumer/call.o \
	src/consumer/batch.o \
	src/consumer/handlers.o \
	src/consumer/dead_letters.o \
	src/consumer/newer_only.o \
	src/consumer/citus_route.o \
	src/consumer/citus_call.o \
	src/gaps/sweep.o \
	src/gaps/citus_gaps.o \
	src/gaps/worker.o \
	src/citus/citus_counters.o \
	src/citus/citus_registry.o \
	src/citus/citus_meta.o \
	src/citus/citus_consumers.o \
	src/citus/citus_reconcile.o \
	src/citus/citus_grants.o \
	src/citus/citus_splits.o \
	src/stats/stats.o \
	src/stats/stats_shmem.o \
	src/stats/stats_prepared.o \
	src/stats/stats_views.o \
	src/stats/sketch.o \
	src/stats/decision_log.o \
	src/storage/owned.o \
	src/storage/owned_rows.o \
	src/storage/owned_tid_cache.o \
	src/storage/parked.o \
	src/storage/dead_letter_store.o \
	src/storage/protect.o \
	src/common/settings.o \
	src/common/plans.o \
	src/common/triggers.o \
	src/common/sha256.o

# The extension's SQL (sql/README.md): the scripts of released versions as
# they were released, and the install script of the current version and
# the update script being written, which make builds from sql/ordering.sql
# and sql/ordering--A--B.sql.in: their "\\ir" lines include the one
# definition of each function and view in sql/definitions/.  A fresh
# install runs the current script alone.
DEFINITIONS = $(wildcard sql/definitions/*/*.sql)
UPDATES_built = $(patsubst %.sql.in,%.sql,$(wildcard sql/ordering--*--*.sql.in))
DATA_built = sql/ordering--$(EXTVERSION).sql $(UPDATES_built)
DATA = $(filter-out $(DATA_built),$(wildcard sql/ordering--*.sql))

REGRESS ?= producer producer_sql bulk_producers restore_mode restore_sweep consumer dead_letters dead_letters_below \
	gaps stats observability metrics search_path gaps_search_path privileges public_functions hot_paths bad_input reconcile \
	check replicated batch batch_equivalence wakeup compat own_tables citus citus_consumer surface
REGRESS_OPTS = --inputdir=. --temp-instance=./tmp_check_regress \
	--temp-config=test/ordering.conf --load-extension=ordering

ISOLATION ?= producer_order keyed_reindex consumer_deliver consumer_apply consumer_newer_only gaps_sweep \
	gaps_race owned_reindex owned_isolation producer_create reconcile_concurrent \
	dead_letters_retry dead_letters_gaps batch_concurrent wakeup_notify citus_consumer_route bulk_concurrent \
	bulk_statement
# pg_isolation_regress reads specs/ and expected/ from --outputdir first, then
# from --inputdir: the specs are linked into the output directory, so the
# expected outputs come from the top-level expected/.
ISOLATION_OPTS = --inputdir=. --outputdir=output_iso \
	--temp-instance=./tmp_check_isolation \
	--temp-config=test/ordering.conf --load-extension=ordering

TAP_TESTS = 1
PROVE_TESTS ?= test/t/*.pl

PG_CPPFLAGS = -DORDERING_VERSION=\"$(EXTVERSION)\" \
	$(addprefix -I$(srcdir)/src/,$(ORDERING_SRC_DIRS)) -I$(srcdir)/src
# ORDERING_CFLAGS=-DUSE_ASSERT_CHECKING builds with assertions (test/valgrind.sh).
# ORDERING_WERROR=-Werror makes every warning an error: test/run.sh (and so
# CI) builds that way; a plain "make" does not, so that a packager's newer
# compiler, with warnings ours has not seen, still builds the extension.
ORDERING_WERROR ?=
PG_CFLAGS = -Wall -Wextra $(ORDERING_WERROR) -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare $(ORDERING_CFLAGS)

EXTRA_CLEAN = tmp_check_regress tmp_check_isolation output_iso \
	results regression.diffs regression.out

# PGXS's own installcheck runs this first too
REGRESS_PREP = output_iso/specs

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# One target per suite, so test/run.sh can run them on separate servers and
# report each; "installcheck" (from PGXS) still runs all three.
.PHONY: installcheck-regress installcheck-isolation installcheck-tap
installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

installcheck-isolation: output_iso/specs
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)

installcheck-tap:
	$(prove_installcheck)

# tools/ordering-reconcile goes into PostgreSQL's bindir, beside psql, as
# "ordering-reconcile".  Not PGXS's SCRIPTS: its uninstall would remove
# bindir/tools/ordering-reconcile, a path install never wrote.
TOOLS = tools/ordering-reconcile
.PHONY: install-tools uninstall-tools
install: install-tools
uninstall: uninstall-tools
install-tools:
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_SCRIPT) $(addprefix $(srcdir)/, $(TOOLS)) '$(DESTDIR)$(bindir)/'

uninstall-tools:
	rm -f $(addprefix '$(DESTDIR)$(bindir)'/, $(notdir $(TOOLS)))

sql/ordering--$(EXTVERSION).sql: sql/ordering.sql sql/include.awk $(DEFINITIONS)
	awk -f sql/include.awk $< >$@.tmp && mv $@.tmp $@

# PGXS has a rule for %.sql.in too (it substitutes MODULE_PATHNAME); make
# picks this one, whose stem is shorter.
sql/%.sql: sql/%.sql.in sql/include.awk $(DEFINITIONS)
	awk -f sql/include.awk $< >$@.tmp && mv $@.tmp $@

output_iso/specs:
	mkdir -p output_iso
	ln -sfn ../test/specs output_iso/specs
