package io.stockade.testing;

import java.nio.file.Files;
import java.nio.file.Path;

import org.jspecify.annotations.Nullable;

/**
 * The SQL clients the PostgreSQL listener's tests drive as users run them: {@code psql} (Debian
 * {@code postgresql-client}), psycopg2 (Debian {@code python3-psycopg2}, run by {@code /usr/bin/python3}) and
 * node-postgres (the npm package {@code pg}, which {@code ./test.sh} installs into {@code .tools/node-pg}).
 */
public final class SqlClients {
    /** node-postgres as {@code ./test.sh} pins it. */
    public static final String NODE_PG = "pg@8.23.1";
    public static final String NODE_PG_INSTALL = "./test.sh installs it: npm install --prefix .tools/node-pg "
            + NODE_PG;

    private SqlClients() {
    }

    /** {@code psql}, or null. */
    public static @Nullable Path psql() {
        return Tools.binary("psql").orElse(null);
    }

    /** The {@code node_modules} directory holding {@code pg} ({@code .tools/node-pg} here or above), or null. */
    public static @Nullable Path nodeModules() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path modules = dir.resolve(".tools/node-pg/node_modules");
            if (Files.isRegularFile(modules.resolve("pg/package.json"))) {
                return modules;
            }
        }
        return null;
    }

    /** Whether node-postgres and Node.js are installed. */
    public static boolean nodePgAvailable() {
        return nodeModules() != null && AwsSdkJs.node() != null;
    }
}
