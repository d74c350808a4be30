-- Schema for policies/examples/postgres-accounts.yaml:  psql -d bank -f postgres-accounts.sql
-- Stockade creates its own fence table (stockade_fences) at start unless the policy says migrate: false;
-- then apply proxy/src/main/resources/io/stockade/proxy/postgres/stockade-fences.sql as well.

CREATE TABLE IF NOT EXISTS accounts (
    id          text PRIMARY KEY,
    owner       text NOT NULL UNIQUE,
    balance     numeric(14, 2) NOT NULL CHECK (balance >= 0),  -- the policy's balance: precision 14, scale 2
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS ledger (
    id          bigserial PRIMARY KEY,
    account     text NOT NULL REFERENCES accounts (id),
    amount      numeric(14, 2) NOT NULL,
    memo        jsonb,
    at          timestamptz NOT NULL DEFAULT now()
);

-- fence: column example: the token lives in the row itself.
CREATE TABLE IF NOT EXISTS profiles (
    id           text PRIMARY KEY,
    display_name text NOT NULL,
    fence_token  bigint NOT NULL DEFAULT 0
);

-- Seed rows, so that the example's session (policies/examples/postgres-accounts.yaml) works on a fresh database.
INSERT INTO accounts (id, owner, balance) VALUES ('acc-1', 'alice', 100.00), ('acc-2', 'bob', 50.00)
    ON CONFLICT (id) DO NOTHING;
