package io.stockade.client.arch;

import io.stockade.client.FencingInterceptor;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client SDK's boundaries. Every lock service's client library is an optional dependency (a user of the Redis
 * provider has no jetcd, ZooKeeper or AWS SDK on the class path), so each library is reached only by the classes of
 * its own provider: a class that any user loads ({@code Leases}, {@code Lease}, {@code FencedHttpClient}) naming
 * one would fail with {@code NoClassDefFoundError} for everyone without it. The library never depends on its command
 * line, and the launcher (compiled for Java 8, so an old Java can say what it needs) on nothing of the SDK.
 */
class ArchitectureTest {
    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.stockade.client");
    }

    @Test
    void etcdsClientIsReachedOnlyByTheEtcdProvider() {
        onlyReaches("io.etcd..", "EtcdLeaseService");
    }

    @Test
    void redisClientIsReachedOnlyByTheRedisProvider() {
        onlyReaches("redis.clients..", "RedisLeaseService");
    }

    @Test
    void zooKeepersClientIsReachedOnlyByTheZooKeeperProvider() {
        onlyReaches("org.apache.zookeeper..", "ZooKeeperLeaseService");
    }

    @Test
    void theAwsSdkIsReachedOnlyByTheDynamoDbProviderAndTheS3Interceptor() {
        for (String allowed : new String[] {"DynamoDbLeaseService", "DynamoDbLockTable"}) {
            assertTrue(classes.contain("io.stockade.client." + allowed), "no class " + allowed + ": renamed?");
        }
        // the builder's dynamodb(DynamoDbClient, table, name) takes the user's own client: the type is resolved
        // only when that method is called; the command line (cli) ships every provider's library in its jar
        noClasses().that().resideInAPackage("io.stockade.client")
                .and().doNotHaveFullyQualifiedName("io.stockade.client.Leases$Builder")
                .and().haveNameNotMatching("io\\.stockade\\.client\\.DynamoDbLeaseService(\\$.*)?")
                .and().haveNameNotMatching("io\\.stockade\\.client\\.DynamoDbLockTable(\\$.*)?")
                .and().haveNameNotMatching("io\\.stockade\\.client\\.FencingInterceptor(\\$.*)?")
                .should().dependOnClassesThat().resideInAPackage("software.amazon..")
                .because("the AWS SDK is optional: " + FencingInterceptor.class.getSimpleName()
                        + ", the DynamoDB provider and the builder's entry to it are the only code that needs it")
                .check(classes);
    }

    @Test
    void theLibraryNeverDependsOnItsCommandLine() {
        noClasses().that().resideInAPackage("io.stockade.client")
                .should().dependOnClassesThat().resideInAPackage("io.stockade.client.cli..")
                .check(classes);
    }

    @Test
    void theLauncherDependsOnTheJdkAlone() {
        noClasses().that().resideInAPackage("io.stockade.client.launch..")
                .should().dependOnClassesThat().resideOutsideOfPackages("java..", "io.stockade.client.launch..")
                .because("it runs on any Java from 8 up to say which Java the SDK needs")
                .check(classes);
    }

    /**
     * Only {@code provider} (a package-private class of {@code io.stockade.client}, named) and its nested classes
     * depend on classes in {@code library}.
     */
    private static void onlyReaches(String library, String provider) {
        assertTrue(classes.contain("io.stockade.client." + provider), "no class " + provider + ": renamed?");
        noClasses().that().resideInAPackage("io.stockade.client..")
                .and().haveNameNotMatching("io\\.stockade\\.client\\." + provider + "(\\$.*)?")
                .should().dependOnClassesThat().resideInAPackage(library)
                .because(library + " is an optional dependency: only " + provider + " may need it")
                .check(classes);
    }
}
