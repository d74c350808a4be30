package io.stockade.conformance;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.stockade.testing.RedisServer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import redis.clients.jedis.Jedis;

import static io.stockade.conformance.ConformanceCases.PG_USER;
import static io.stockade.conformance.ConformanceCases.assertEveryScenarioPassedAndEveryControlCaught;
import static io.stockade.conformance.ConformanceCases.etcd;
import static io.stockade.conformance.ConformanceCases.freePort;
import static io.stockade.conformance.ConformanceCases.httpBackendOn;
import static io.stockade.conformance.ConformanceCases.inFreshSchema;
import static io.stockade.conformance.ConformanceCases.memoryStore;
import static io.stockade.conformance.ConformanceCases.pgOne;
import static io.stockade.conformance.ConformanceCases.policy;
import static io.stockade.conformance.ConformanceCases.runConclusively;
import static io.stockade.conformance.ConformanceCases.target;
import static io.stockade.conformance.ConformanceCases.yamlList;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The suite with real lock services and the other fence stores: the file backend with the writers' leases from
 * Redis, ZooKeeper, DynamoDB (dynalite) and Consul (a stand-in), each verified by the proxy against the same service;
 * the HTTP backend on the etcd fence store (which {@code store-stop} stops and kills) and on the PostgreSQL one.
 * Runs beside {@link ConformanceBackendsIT} (another test JVM); {@link ConformanceCases} holds what both share.
 */
@Execution(ExecutionMode.CONCURRENT)   // its cases side by side (junit-platform.properties)
class ConformanceLeasesAndStoresIT {
    /**
     * The file backend with the writers holding real leases from a real redis-server (the client SDK's Redis provider,
     * TTL 1 s: the zombie's lock really expires in Redis while it is stopped or delayed), and the proxy verifying every
     * token against the same Redis ({@code fence.verify: {kind: redis}}: the lock key is the run's key, which the
     * policy's scope {@code {path}} gives): {@code pause} and {@code proxy-restart}. ({@code delay}, {@code timeout}
     * and {@code lost-response} fault the writer's connection to the proxy only; the SDK's watchdog keeps renewing
     * the lease meanwhile, so no handoff happens and they stay inconclusive, as with the etcd and PostgreSQL
     * providers.)
     */
    @Test
    void fileBackendWithRedisLeasesPassesPauseAndProxyRestart(@TempDir Path dir) throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.REDIS);
        try (RedisServer redis = RedisServer.start(RedisServer.options())) {
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: redis, url: "%s"}
                        backend:
                          type: file
                          root: %s
                    """.formatted(redis.url(), root));
            Target target = target(dir, "file+redis-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: redis
                      redis: %s
                      ttl: 1s
                    """.formatted(root, root, redis.url()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE, Scenario.PROXY_RESTART);
            assertEveryScenarioPassedAndEveryControlCaught(r);
            try (Jedis locks = new Jedis(redis.url())) {   // the leases came from Redis, one lock per run
                for (ScenarioResult s : r.scenarios()) {
                    for (String key : List.of(s.proxied().key(), s.control().key())) {
                        String counter = locks.get("stockade:token:{" + key + "}");
                        assertTrue(counter != null && Long.parseLong(counter) > 1_000_000_000_000L,
                                s.scenario().id() + ": " + key + " -> " + counter);
                    }
                }
            }
        }
    }

    /**
     * As the Redis run, with ZooKeeper: the writers hold real leases from a real ZooKeeper server (Curator's
     * {@code TestingServer} in process, tickTime 200 ms so that the 1 s TTL is an allowed session timeout; the client
     * SDK's ZooKeeper provider, token = the lock node's czxid) and the proxy verifies every token against the same
     * server ({@code fence.verify: {kind: zookeeper}}, lock path {@code /<run key>}). An accepted write is one the
     * verifier found to be the current holder's node: the leases came from ZooKeeper.
     */
    @Test
    void fileBackendWithZooKeeperLeasesPassesPauseAndProxyRestart(@TempDir Path dir) throws Exception {
        try (org.apache.curator.test.TestingServer zk = new org.apache.curator.test.TestingServer(
                new org.apache.curator.test.InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true)) {
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: zookeeper, servers: "%s", prefix: /}
                        backend:
                          type: file
                          root: %s
                    """.formatted(zk.getConnectString(), root));
            Target target = target(dir, "file+zookeeper-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: zookeeper
                      zookeeper: "%s"
                      ttl: 1s
                    """.formatted(root, root, zk.getConnectString()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE, Scenario.PROXY_RESTART);
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }

    /**
     * As the ZooKeeper run, with DynamoDB: the writers hold real leases from dynalite (a DynamoDB API server; the
     * client SDK's DynamoDB provider, token = the lock item's counter, credentials from the environment the failsafe
     * configuration gives the test JVM) and the proxy verifies every token against the same table
     * ({@code fence.verify: {kind: dynamodb}}, the item's rvn rule included). An accepted write is one the verifier
     * found to carry the current holder's token: the leases came from DynamoDB.
     */
    @Test
    void fileBackendWithDynamoDbLeasesPassesPauseAndProxyRestart(@TempDir Path dir) throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.DYNALITE);
        try (io.stockade.testing.Dynalite dynalite = io.stockade.testing.Dynalite.start()) {
            String table = dynalite.createLockTable("conformance-locks");
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: dynamodb, table: %s, region: %s, endpoint: "%s",
                                   access-key: %s, secret-key: %s, cache: {enabled: false}}
                        backend:
                          type: file
                          root: %s
                    """.formatted(table, io.stockade.testing.Dynalite.REGION, dynalite.endpoint(),
                    io.stockade.testing.Dynalite.ACCESS_KEY, io.stockade.testing.Dynalite.SECRET_KEY,
                    root));
            Target target = target(dir, "file+dynamodb-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: dynamodb
                      dynamodb: %s
                      dynamodb-region: %s
                      dynamodb-endpoint: "%s"
                      ttl: 1s
                    """.formatted(root, root, table, io.stockade.testing.Dynalite.REGION, dynalite.endpoint()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE, Scenario.PROXY_RESTART);
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }

    /**
     * As the ZooKeeper run, with Consul: the writers hold leases from {@code ConsulStandIn} in real-time mode (an
     * in-process stand-in of Consul's session and KV API — <b>not a real Consul</b>, none can be installed here;
     * sessions expire by themselves at 2 × TTL and leave a 15 s lock-delay) through the client SDK's Consul provider
     * (token = the key's {@code ModifyIndex}), and the proxy verifies every token against it
     * ({@code fence.verify: {kind: consul}}). Consul's shortest session TTL is 10 s, so this run is the slow one:
     * pause only. The stand-in caps each session's lock-delay at 1 s (the SDK asks for 15 s): the next holder takes
     * the lock 1 s after the zombie's session was invalidated instead of 15 s, twice a run (control and proxied),
     * and the zombie, still stopped, writes after that holder's writes all the same; what is asserted is the
     * proxy's refusal of it, which does not depend on how long the lock stayed free.
     */
    @Test
    void fileBackendWithConsulLeasesPassesPause(@TempDir Path dir) throws Exception {
        try (io.stockade.testing.ConsulStandIn consul = io.stockade.testing.ConsulStandIn.realTime(
                Duration.ofSeconds(1))) {
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: consul, url: "%s", cache: {enabled: false}}
                        backend:
                          type: file
                          root: %s
                    """.formatted(consul.url(), root));
            Target target = target(dir, "file+consul-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: consul
                      consul: "%s"
                      ttl: 10s
                    """.formatted(root, root, consul.url()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE);
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }

    /**
     * The etcd fence store, launched by the suite (so {@code store-stop} can SIGSTOP it, kill -9 it and start it
     * again on the same data), behind the proxy's HTTP backend; the writers hold real leases from a second etcd (the
     * lock service: the client SDK's etcd provider, TTL 2 s, token = the lock key's create revision), so in
     * {@code pause} the zombie's lease really expires in etcd while it is stopped. The token cache is off, so the
     * zombie's write during the outage has to ask the stopped store (and be refused, 503).
     */
    @Test
    void etcdStoreSurvivesAStoreStopWithEtcdLeases(@TempDir Path dir) throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        int storePort = freePort();
        List<String> lockCmd = etcd(dir.resolve("locks-etcd"), freePort());
        String lockUrl = lockCmd.get(lockCmd.indexOf("--listen-client-urls") + 1);
        try (io.stockade.conformance.run.StoreProcess lockService = new io.stockade.conformance.run.StoreProcess(
                lockCmd, lockUrl.substring("http://".length()), dir.resolve("locks.log"))) {
            lockService.start(Duration.ofSeconds(30));
            httpBackendOn(dir, "http+etcd-store", """
                    store:
                      type: etcd
                      endpoints: [http://127.0.0.1:%d]
                      timeout: 1s
                      cache: {enabled: false}
                    """.formatted(storePort), """
                    store:
                      launch: %s
                      ready: 127.0.0.1:%d
                    lease:
                      provider: etcd
                      etcd: %s
                      ttl: 2s
                    """.formatted(yamlList(etcd(dir.resolve("store-etcd"), storePort)), storePort, lockUrl),
                    Scenario.PAUSE, Scenario.STORE_STOP);
        }
    }

    /**
     * The PostgreSQL fence store (a fresh schema of database {@code test}) behind the proxy's HTTP backend, the
     * writers holding leases from the client SDK's PostgreSQL provider ({@code stockade_leases}, expiry on the
     * database's clock) in the same schema: {@code pause} and {@code proxy-restart}.
     */
    @Test
    void postgresStoreWithPostgresLeases(@TempDir Path dir) throws Exception {
        inFreshSchema((schema, url) -> {
            Conformance.Result r = httpBackendOn(dir, "http+pg-store", """
                    store:
                      type: postgres
                      datasource:
                        url: "%s"
                        user: %s
                    """.formatted(url, PG_USER), """
                    lease:
                      provider: postgres
                      jdbc: "%s&user=%s"
                      ttl: 1s
                    """.formatted(url, PG_USER), Scenario.PAUSE, Scenario.PROXY_RESTART);
            for (ScenarioResult s : r.scenarios()) {   // the leases came from the table, with real tokens
                assertTrue(pgOne(url, "select token from stockade_leases where name = ?", s.proxied().key()) != null,
                        s.scenario().id());
            }
        });
    }
}
