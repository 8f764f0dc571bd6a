-- Undoes V000002__dim_user.sql (`hephaestus ksql undo --cluster lmsdwh --until 1`): the sink
-- connector, then the tables, each after whatever reads it (ksqlDB refuses to drop a source a
-- query still reads; dropping a table ends the query that writes it).
-- The topics stay (no DELETE TOPIC): the sink's topic and its rows in public.dim_user are
-- data; applying V000002 again writes into the same topics.
-- IF EXISTS: ksqlDB has no transactions, so an undo that failed halfway can be re-run.

DROP CONNECTOR IF EXISTS LMSDWH_DIM_USER_SINK;
DROP TABLE IF EXISTS DIM_USER;
DROP TABLE IF EXISTS BOB_STUDENTS_LATEST;
DROP TABLE IF EXISTS BOB_USERS_LATEST;
