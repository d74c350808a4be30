package io.stockade.proxy;

/**
 * The contract through the postgres backend, {@code fence: table}, with {@code one-statement: true}: each write of
 * one statement is sent as one statement carrying its fence instead of an explicit transaction (the fence call, the
 * statement, COMMIT: {@link PostgresContractIT}, the default).
 */
class PostgresOneStatementContractIT extends PostgresContractIT {
    @Override
    String backendYaml() {
        String yaml = super.backendYaml();
        String oneStatement = yaml.replace("      type: postgres\n",
                "      type: postgres\n      one-statement: true\n");
        if (oneStatement.equals(yaml)) {
            throw new IllegalStateException("the contract's backend changed shape: one-statement: true not set");
        }
        return oneStatement;
    }
}
