-- The tables attached now (ordering.attachments), with whether their
-- sequencing trigger is enabled; a partitioned table stands for its
-- partitions.  ordering.check() finds the attached tables here and nowhere
-- else.
CREATE OR REPLACE VIEW ordering.attached_tables AS
SELECT a.tbl AS table_name,
       a.resource_column,
       a.sequence_column,
       a.stream,
       COALESCE((SELECT t.tgenabled OPERATOR(pg_catalog.<>) 'D'
                   FROM pg_catalog.pg_trigger t
                  WHERE t.tgrelid OPERATOR(pg_catalog.=) a.tbl
                    AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'), false) AS enabled
  FROM ordering.attachments a
 WHERE a.attached;
COMMENT ON VIEW ordering.attached_tables IS
    'The tables whose rows ordering.sequence_trigger() numbers: resource and sequence column, stream, and whether the trigger is enabled';
