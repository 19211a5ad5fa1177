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
OBJS = \
	src/ordering.o \
	src/settings.o \
	src/plans.o \
	src/owned.o \
	src/owned_rows.o \
	src/counters.o \
	src/statement_counters.o \
	src/resource_key.o \
	src/provisional.o \
	src/attached.o \
	src/attachments.o \
	src/citus.o \
	src/wakeup.o \
	src/producer.o \
	src/restore.o \
	src/protect.o \
	src/consumer.o \
	src/consumer_citus.o \
	src/consumer_call.o \
	src/citus_meta.o \
	src/batch.o \
	src/handlers.o \
	src/dead_letters.o \
	src/dead_letter_store.o \
	src/parked.o \
	src/newer_only.o \
	src/stats.o \
	src/stats_shmem.o \
	src/stats_views.o \
	src/sketch.o \
	src/decision_log.o \
	src/triggers.o \
	src/gaps.o \
	src/gaps_citus.o \
	src/worker.o \
	src/sha256.o \
	src/antientropy.o \
	src/standbys.o

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

REGRESS = producer producer_sql bulk_producers restore_mode restore_sweep consumer dead_letters dead_letters_below \
	gaps stats observability metrics search_path gaps_search_path privileges public_functions hot_paths bad_input reconcile \
	check replicated batch batch_equivalence wakeup compat own_tables citus citus_consumer surface
REGRESS_OPTS = --inputdir=. --temp-instance=./tmp_check_regress \
	--temp-config=test/ordering.conf --load-extension=ordering

ISOLATION = producer_order keyed_reindex consumer_deliver consumer_apply consumer_newer_only gaps_sweep \
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

PG_CPPFLAGS = -DORDERING_VERSION=\"$(EXTVERSION)\"
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

sql/ordering--$(EXTVERSION).sql: sql/ordering.sql sql/include.awk $(DEFINITIONS)
	awk -f sql/include.awk $< >$@.tmp && mv $@.tmp $@

# PGXS has a rule for %.sql.in too (it substitutes MODULE_PATHNAME); make
# picks this one, whose stem is shorter.
sql/%.sql: sql/%.sql.in sql/include.awk $(DEFINITIONS)
	awk -f sql/include.awk $< >$@.tmp && mv $@.tmp $@

output_iso/specs:
	mkdir -p output_iso
	ln -sfn ../test/specs output_iso/specs
