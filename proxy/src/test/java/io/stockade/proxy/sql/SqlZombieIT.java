package io.stockade.proxy.sql;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.StockadeServer;
import io.stockade.testing.Jvm;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Signals;
import io.stockade.testing.SqlClients;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real zombies: psql, psycopg2, node-postgres and pgjdbc, each a process of its own that takes a lease from a
 * PostgreSQL lease table (the client SDK's {@code stockade_leases}: a token raised by one at every acquisition,
 * expiry on the database's clock), writes its row through the listener with the lease's token, and is then stopped
 * ({@code SIGSTOP}) past its lease. A new holder takes each lease (it waits for the expiry by polling the lease
 * table) and writes; the zombies are continued ({@code SIGCONT}) and at once write again on the session they held
 * all along, with the token they still believe in. Each such write is refused with {@code SF409}, nothing it wrote
 * is visible, and the fence rows hold the new holder's tokens. The four run side by side (one pause for all).
 */
@RequiresTools({Tools.Tool.PSQL, Tools.Tool.PSYCOPG2, Tools.Tool.NODE_PG})
class SqlZombieIT {
    /** The client SDK's acquisition ({@code PostgresLeaseService}), with a 1 s TTL: ? = name, holder. */
    static final String ACQUIRE = """
            INSERT INTO stockade_leases AS l (name, holder, token, expires_at)
            VALUES (?, ?, 1, now() + interval '1 second')
            ON CONFLICT (name) DO UPDATE
               SET token = l.token + 1, holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
             WHERE l.expires_at < now() OR l.holder = EXCLUDED.holder
            RETURNING token""";
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    static Path dir;
    static SqlDatabase db;
    static StockadeServer proxy;
    static String conninfo;

    @BeforeAll
    static void start() throws Exception {
        db = SqlDatabase.create(dir);
        db.execute("CREATE TABLE stockade_leases (name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL,"
                + " expires_at timestamptz NOT NULL); GRANT SELECT, INSERT, UPDATE ON stockade_leases TO " + db.app);
        Path config = db.policyFile("stockade.yaml", 5432, "");
        proxy = SqlDatabase.installAndStart(config);
        conninfo = "host=127.0.0.1 port=" + proxy.sql().port() + " dbname=" + db.name + " user=" + db.app;
    }

    @AfterAll
    static void stop() throws Exception {
        SqlDatabase.stop(proxy, db);
    }

    /** A client process, its output line by line, and what it wrote to the table. */
    record Zombie(String client, int id, Process process, BlockingQueue<String> lines) {
        /** What follows {@code marker} in the next line holding it (psql prefixes {@code psql:<stdin>:N: }). */
        String await(String marker) throws InterruptedException {
            long deadline = System.nanoTime() + WAIT.toNanos();
            List<String> seen = new ArrayList<>();
            while (System.nanoTime() < deadline) {
                String line = lines.poll(100, TimeUnit.MILLISECONDS);
                if (line != null && line.contains(marker)) {
                    return line.substring(line.indexOf(marker) + marker.length()).strip();
                }
                if (line != null) {
                    seen.add(line);
                }
            }
            throw new AssertionError(client + " printed no '" + marker + "' within " + WAIT.toSeconds() + " s: "
                    + seen + (process.isAlive() ? "" : " (exited " + process.exitValue() + ")"));
        }

        void send(String text) throws IOException {
            OutputStream in = process.getOutputStream();
            in.write(text.getBytes(StandardCharsets.UTF_8));
            in.close(); // buffered in the pipe while the process is stopped: its first read after SIGCONT
        }
    }

    static Zombie start(String client, int id, List<String> command, String stdin) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("NODE_PATH", String.valueOf(SqlClients.nodeModules()));
        pb.environment().put("PGCONNECT_TIMEOUT", "10");
        Process p = pb.start();
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    lines.add(line);
                }
            } catch (IOException e) {
                lines.add("(output broke off: " + e + ")");
            }
        });
        if (stdin != null) {
            p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
            p.getOutputStream().flush();
        }
        return new Zombie(client, id, p, lines);
    }

    /** psql reading its commands from standard input, as a script piped into it would. */
    static Zombie psql(int id) throws IOException {
        String acquire = ACQUIRE.replaceFirst("\\?", "'jobs/" + id + "'").replaceFirst("\\?", "'psql'");
        return start("psql", id, List.of(SqlClients.psql().toString(), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                "-d", conninfo), """
                \\set VERBOSITY verbose
                %s \\gset lease_
                SET stockade.fencing_token = :lease_token;
                INSERT INTO jobs VALUES (%d, 'psql-holder') ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state;
                INSERT INTO runs (job_id, note) VALUES (%2$d, 'psql-holder');
                \\warn WROTE :lease_token
                """.formatted(acquire, id));
    }

    static Zombie psycopg2(int id) throws IOException {
        return start("psycopg2", id, List.of("/usr/bin/python3", "-u", "-c", """
                import sys, psycopg2
                conn = psycopg2.connect(sys.argv[1])
                name, row = sys.argv[2], int(sys.argv[3])
                with conn.cursor() as cur:
                    cur.execute(sys.argv[4].replace("?", "%s"), (name, "psycopg2"))
                    token = cur.fetchone()[0]
                conn.commit()
                def write(state):
                    with conn.cursor() as cur:
                        cur.execute("SET LOCAL stockade.fencing_token = %s", (token,))
                        cur.execute("INSERT INTO jobs VALUES (%s, %s) ON CONFLICT (id) DO UPDATE"
                                    " SET state = EXCLUDED.state", (row, state))
                        cur.execute("INSERT INTO runs (job_id, note) VALUES (%s, %s)", (row, state))
                    conn.commit()
                write("psycopg2-holder")
                print("WROTE", token)
                sys.stdin.readline()
                try:
                    write("psycopg2-zombie")
                    print("COMMITTED")
                except psycopg2.Error as e:
                    conn.rollback()
                    print("REFUSED", e.pgcode)
                """, conninfo, "jobs/" + id, Integer.toString(id), ACQUIRE), null);
    }

    static Zombie nodePostgres(int id) throws IOException {
        Path script = dir.resolve("zombie.js");
        Files.writeString(script, """
                const { Client } = require('pg');
                const readline = require('readline');
                const [url, name, row, acquire] = process.argv.slice(2);
                (async () => {
                  const client = new Client({ connectionString: url });
                  await client.connect();
                  let i = 0;
                  const token = (await client.query(acquire.replace(/\\?/g, () => '$' + ++i), [name, 'node-pg']))
                      .rows[0].token;
                  const write = async (state) => {
                    await client.query('BEGIN');
                    try {
                      await client.query("SELECT set_config('stockade.fencing_token', $1, true)", [token]);
                      await client.query('INSERT INTO jobs VALUES ($1, $2) ON CONFLICT (id) DO UPDATE'
                          + ' SET state = EXCLUDED.state', [row, state]);
                      await client.query('INSERT INTO runs (job_id, note) VALUES ($1, $2)', [row, state]);
                      await client.query('COMMIT');
                    } catch (e) {
                      await client.query('ROLLBACK');
                      throw e;
                    }
                  };
                  await write('node-pg-holder');
                  console.log('WROTE ' + token);
                  const rl = readline.createInterface({ input: process.stdin });
                  await new Promise((resolve) => rl.once('line', resolve));
                  rl.close();
                  try {
                    await write('node-pg-zombie');
                    console.log('COMMITTED');
                  } catch (e) {
                    console.log('REFUSED ' + e.code);
                  }
                  await client.end();
                })();
                """);
        return start("node-pg", id, List.of("/usr/bin/node", script.toString(), "postgresql://" + db.app
                + "@127.0.0.1:" + proxy.sql().port() + "/" + db.name, "jobs/" + id, Integer.toString(id), ACQUIRE),
                null);
    }

    static Zombie pgjdbc(int id) throws IOException {
        ProcessBuilder pb = Jvm.java(List.of("-Xmx64m"), SqlZombieWriter.class.getName(), "jdbc:postgresql://"
                + "127.0.0.1:" + proxy.sql().port() + "/" + db.name + "?user=" + db.app, "jobs/" + id,
                Integer.toString(id));
        return start("pgjdbc", id, pb.command(), null);
    }

    /** The new holder: takes the lease once the zombie's expired (polling, on the database's clock), and writes. */
    static long successorWrites(int id) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + proxy.sql().port() + "/" + db.name + "?user=" + db.app;
        long deadline = System.nanoTime() + WAIT.toNanos();
        Long token = null;
        try (Connection c = DriverManager.getConnection(url); PreparedStatement acquire = c.prepareStatement(ACQUIRE)) {
            while (token == null) {
                acquire.setString(1, "jobs/" + id);
                acquire.setString(2, "successor");
                try (ResultSet r = acquire.executeQuery()) {
                    token = r.next() ? r.getLong(1) : null;
                }
                assertTrue(System.nanoTime() < deadline, "the lease jobs/" + id + " did not expire");
                if (token == null) {
                    Thread.sleep(50);
                }
            }
        }
        try (Connection c = DriverManager.getConnection(url + "&options=-c%20stockade.fencing_token=" + token);
             PreparedStatement job = c.prepareStatement("UPDATE jobs SET state = 'successor' WHERE id = ?");
             PreparedStatement run = c.prepareStatement("INSERT INTO runs (job_id, note) VALUES (?, 'successor')")) {
            c.setAutoCommit(false);
            job.setInt(1, id);
            assertEquals(1, job.executeUpdate());
            run.setInt(1, id);
            run.executeUpdate();
            c.commit();
        }
        return token;
    }

    @Test
    void everyClientStoppedPastItsLeaseIsRefusedAfterTheNextHolderWroteAndNothingItWroteIsVisible()
            throws Exception {
        List<Zombie> zombies = List.of(psql(3001), psycopg2(3002), nodePostgres(3003), pgjdbc(3004));
        try {
            List<Long> held = new ArrayList<>();
            for (Zombie z : zombies) {
                held.add(Long.parseLong(z.await("WROTE ")));
            }
            for (Zombie z : zombies) {
                assertEquals(List.of(z.client() + "-holder"), notes(z.id()));
                assertEquals(held.get(zombies.indexOf(z)), db.fence("jobs/" + z.id()));
                Signals.stop(z.process().pid());
                // the zombie's next step, queued while it is stopped: it runs the moment the process continues
                z.send(z.client().equals("psql") ? """
                        BEGIN;
                        UPDATE jobs SET state = 'psql-zombie' WHERE id = %d;
                        INSERT INTO runs (job_id, note) VALUES (%1$d, 'psql-zombie');
                        COMMIT;
                        """.formatted(z.id()) : "GO\n");
            }
            List<Long> next = new ArrayList<>();
            for (Zombie z : zombies) {
                next.add(successorWrites(z.id()));
            }
            for (Zombie z : zombies) {
                assertTrue(Signals.stopped(z.process().pid()), z.client() + " ran during the handoff");
                Signals.cont(z.process().pid());
            }
            for (int i = 0; i < zombies.size(); i++) {
                Zombie z = zombies.get(i);
                long token = held.get(i);
                assertTrue(next.get(i) > token, z.client() + ": the successor's token " + next.get(i));
                if (z.client().equals("psql")) {
                    String error = z.await("ERROR:");
                    assertTrue(error.startsWith("SF409: stockade: stale fencing token " + token + " for public.jobs"
                            + " scope 'jobs/" + z.id() + "': the highest accepted is " + next.get(i)), error);
                } else {
                    assertEquals("SF409", z.await("REFUSED "), z.client());
                }
                assertTrue(z.process().waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), z.client() + " did not end");
                assertEquals(List.of("successor"), db.column("SELECT state FROM jobs WHERE id = ?", z.id()),
                        z.client());
                assertEquals(List.of(z.client() + "-holder", "successor"), notes(z.id()), z.client());
                assertEquals(next.get(i), db.fence("jobs/" + z.id()), z.client() + ": the fence moved");
            }
        } finally {
            for (Zombie z : zombies) {
                if (Signals.stopped(z.process().pid())) {
                    Signals.cont(z.process().pid());
                }
                z.process().destroyForcibly();
            }
        }
    }

    private static List<String> notes(int id) throws SQLException {
        return db.column("SELECT note FROM runs WHERE job_id = ? ORDER BY id", id);
    }
}
