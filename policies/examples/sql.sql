-- Tables for policies/examples/sql.yaml (./quickstart.sh --example sql loads it into a database of its own):
--   psql -d app -v app_role=jobs -f policies/examples/sql.sql      then: bin/stockade sql install --config ...
-- The application's role writes the tables but owns none of them: an owner could switch a fence trigger off.
-- Load the rows before 'sql install': once the triggers are there, a write without a token is refused (SF428).

CREATE TABLE IF NOT EXISTS jobs (
    id     int PRIMARY KEY,
    state  text NOT NULL
);

CREATE TABLE IF NOT EXISTS job_runs (
    id      bigserial PRIMARY KEY,
    job_id  int NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    note    text NOT NULL
);

INSERT INTO jobs VALUES (1, 'queued'), (2, 'queued') ON CONFLICT (id) DO NOTHING;

GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, job_runs TO :"app_role";
GRANT USAGE ON SEQUENCE job_runs_id_seq TO :"app_role";
