package io.stockade.proxy;

/**
 * The contract through the postgres backend, {@code fence: table}, with {@code one-statement: false}: each write of
 * one statement runs as an explicit transaction (the fence call, the statement, COMMIT) instead of one statement
 * with its fence ({@link PostgresContractIT}, the default).
 */
class PostgresTransactionContractIT extends PostgresContractIT {
    @Override
    String backendYaml() {
        String yaml = super.backendYaml();
        String transaction = yaml.replace("      type: postgres\n",
                "      type: postgres\n      one-statement: false\n");
        if (transaction.equals(yaml)) {
            throw new IllegalStateException("the contract's backend changed shape: one-statement: false not set");
        }
        return transaction;
    }
}
