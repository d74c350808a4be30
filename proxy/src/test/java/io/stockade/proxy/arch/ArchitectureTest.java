package io.stockade.proxy.arch;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Fencing;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The proxy's package boundaries, as proxy/README.md states them, checked on the compiled classes (ArchUnit): the
 * request path calls the backends and the stores, never the other way round, and each backend and each store is a
 * package a newcomer can own without reading the others.
 */
class ArchitectureTest {
    private static JavaClasses classes;

    @BeforeAll
    static void load() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.stockade.proxy");
    }

    @Test
    void backendsStoresAndVerifiersNeverReachBackIntoThePipelineOrTheServer() {
        noClasses().that().resideInAnyPackage("..proxy.backend..", "..proxy.store..", "..proxy.verify..",
                        "..proxy.fence..", "..proxy.upstream..")
                .should().dependOnClassesThat().resideInAnyPackage("..proxy.pipeline..", "..proxy.admin..")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("io.stockade.proxy.StockadeServer")
                .check(classes);
    }

    @Test
    void eachBackendIsAPackageOfItsOwn() {
        // the registry (BackendTypes) maps each policy to its backend's type: it alone may name them all
        slices().matching("io.stockade.proxy.backend.(*)..").should().notDependOnEachOther()
                .ignoreDependency(JavaClass.Predicates.resideInAPackage("io.stockade.proxy.backend.registry.."),
                        DescribedPredicate.alwaysTrue())
                .check(classes);
    }

    @Test
    void eachStoreIsAPackageOfItsOwn() {
        slices().matching("io.stockade.proxy.store.(*)..").should().notDependOnEachOther().check(classes);
    }

    @Test
    void eachVerifierIsAPackageOfItsOwn() {
        // the registry (TokenVerifiers) opens each kind: it alone may name them all
        slices().matching("io.stockade.proxy.verify.(*)..").should().notDependOnEachOther()
                .ignoreDependency(JavaClass.Predicates.resideInAPackage("io.stockade.proxy.verify.registry.."),
                        DescribedPredicate.alwaysTrue())
                .check(classes);
    }

    /**
     * The layering review: backend and http, verify and its kinds were cycles (BodyBounds and TokenVerifiers moved).
     */
    @Test
    void packagesAreFreeOfCycles() {
        slices().matching("io.stockade.proxy.(**)").should().beFreeOfCycles().check(classes);
    }

    /**
     * The layering review: the server's root package (StockadeServer, Reloader, Main) wires the packages together; none
     * of them
     * reaches back into it (the admin API named Reloader; it now names the PolicyReload interface it declares).
     */
    @Test
    void noPackageDependsOnTheServersRootPackage() {
        noClasses().that().resideInAPackage("io.stockade.proxy.(*)..")
                .should().dependOnClassesThat().resideInAPackage("io.stockade.proxy")
                .check(classes);
    }

    /**
     * The shared stream and file plumbing is a leaf: anyone may use it, it uses nothing of Stockade's (the JSpecify
     * annotations the null checks read aside).
     */
    @Test
    void theIoPackageIsALeaf() {
        noClasses().that().resideInAPackage("io.stockade.proxy.io..")
                .should().dependOnClassesThat()
                .resideOutsideOfPackages("java..", "io.stockade.proxy.io..", "org.jspecify.annotations..")
                .check(classes);
    }

    /**
     * One decider: a backend's plan alone says what is fenced and how, from the policy's fencing read once at load
     * ({@link Fencing}). No other class of the proxy reads {@code fence.methods}, the mode, {@code missing},
     * {@code equal} or {@code max-advance} off the policy, so nothing after the plan can judge a request again (the
     * pipeline once fenced by {@code fence.methods} what the S3 plan had read as an operation).
     */
    @Test
    void onlyFencingReadsThePolicysFencingFields() {
        noClasses().that().doNotBelongToAnyOf(Fencing.class)
                .should().callMethod(Policy.Fence.class, "methods")
                .orShould().callMethod(Policy.Fence.class, "mode")
                .orShould().callMethod(Policy.Fence.class, "missing")
                .orShould().callMethod(Policy.Fence.class, "equal")
                .orShould().callMethod(Policy.Fence.class, "maxAdvance")
                .orShould().callMethod(Policy.Fence.class, "tooFar", long.class, long.class)
                .orShould().callMethod(Policy.Fence.class, "mayBeTooFar", long.class)
                .orShould().callMethod(Policy.Fence.class, "firstTokenMax")
                .orShould().callMethod(Policy.class, "fences", String.class)
                .because("the plan is the only decider of what is fenced (Fencing reads the policy once, at load)")
                .check(classes);
    }

    /**
     * A backend states its own facts ({@code BackendType}: how to open it, where its fence is kept, its scopes): no
     * class outside the backend packages names a backend's configuration record, so no switch on a policy's backend
     * type grows outside them, and a new backend is its package plus one line in {@code backend.registry}.
     */
    @Test
    void onlyTheBackendsNameTheirConfiguration() {
        noClasses().that().resideOutsideOfPackage("io.stockade.proxy.backend..")
                .should().dependOnClassesThat().belongToAnyOf(BackendConfig.Http.class, BackendConfig.File.class,
                        BackendConfig.Postgres.class, BackendConfig.S3.class)
                .because("each backend type answers for itself (BackendType), registered once (BackendTypes)")
                .check(classes);
    }

    @Test
    void thePolicyModelNeverDependsOnTheServer() {
        noClasses().that().resideInAPackage("io.stockade.policy..")
                .should().dependOnClassesThat().resideInAPackage("io.stockade.proxy..")
                .check(new ClassFileImporter().importPackages("io.stockade.policy"));
    }
}
