package io.stockade.client.arch;

import io.stockade.client.DynamoDbLeaseService;
import io.stockade.client.EtcdLeaseService;
import io.stockade.client.FencingInterceptor;
import io.stockade.client.RedisLeaseService;
import io.stockade.client.ZooKeeperLeaseService;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

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
        onlyReaches("io.etcd..", EtcdLeaseService.class);
    }

    @Test
    void redisClientIsReachedOnlyByTheRedisProvider() {
        onlyReaches("redis.clients..", RedisLeaseService.class);
    }

    @Test
    void zooKeepersClientIsReachedOnlyByTheZooKeeperProvider() {
        onlyReaches("org.apache.zookeeper..", ZooKeeperLeaseService.class);
    }

    @Test
    void theAwsSdkIsReachedOnlyByTheDynamoDbProviderAndTheS3Interceptor() {
        noClasses().that().resideInAPackage("io.stockade.client..")
                .and().doNotHaveFullyQualifiedName(DynamoDbLeaseService.class.getName())
                .and().haveNameNotMatching("io\\.stockade\\.client\\.DynamoDbLeaseService\\$.*")
                .and().haveNameNotMatching("io\\.stockade\\.client\\.DynamoDbLockTable(\\$.*)?")
                .and().haveNameNotMatching("io\\.stockade\\.client\\.FencingInterceptor(\\$.*)?")
                .should().dependOnClassesThat().resideInAPackage("software.amazon..")
                .because("the AWS SDK is optional: " + FencingInterceptor.class.getSimpleName()
                        + " and the DynamoDB provider are the only classes that need it")
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

    /** Only {@code provider} and its nested classes depend on classes in {@code library}. */
    private static void onlyReaches(String library, Class<?> provider) {
        String name = provider.getName().replace(".", "\\.");
        noClasses().that().resideInAPackage("io.stockade.client..")
                .and().haveNameNotMatching(name + "(\\$.*)?")
                .should().dependOnClassesThat().resideInAPackage(library)
                .because(library + " is an optional dependency: only " + provider.getSimpleName() + " may need it")
                .check(classes);
    }
}
