package io.stockade.proxy.backend.s3;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The S3 backend's parts call one way (package-info): the backend, then the plan ({@link S3Planner}), which asks
 * the admission ({@link S3Admission}) and the backend's class ({@link S3Class}), which writes through the relay and
 * the store. No part calls back up: the store's side never names the class, the plan or the admission; the class
 * never names the plan or the admission; the admission never names the plan, the class or the relay.
 */
class S3OneWayTest {
    private static final String PACKAGE = "io.stockade.proxy.backend.s3.";
    private static final String[] BACKEND = {"S3Backend"};
    private static final String[] PLAN = {"S3Planner"};
    private static final String[] ADMISSION = {"S3Admission", "FormAdmission", "S3Tokens"};
    private static final String[] CLASSES = {"S3Class", "AtomicClass", "SerializedClass"};
    private static final String[] STORAGE = {"Relay", "Multipart", "Tombstones", "ConditionalWrite", "S3Failures",
        "FormUploads", "Upstream", "Listings", "UploadIds", "EndpointWrites", "EtagCache", "Spool", "ConditionalCopy"};

    private static JavaClasses classes;

    @BeforeAll
    static void load() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.stockade.proxy.backend.s3");
    }

    /** The classes named, with their nested and anonymous classes (lambdas are methods of their own class). */
    private static String named(String[]... groups) {
        StringBuilder names = new StringBuilder();
        for (String[] group : groups) {
            for (String name : group) {
                names.append(names.isEmpty() ? "" : "|").append(name);
            }
        }
        return PACKAGE.replace(".", "\\.") + "(" + names + ")(\\$.*)?";
    }

    @Test
    void theStoresSideNeverNamesTheClassThePlanOrTheAdmission() {
        noClasses().that().haveNameMatching(named(STORAGE))
                .should().dependOnClassesThat().haveNameMatching(named(BACKEND, PLAN, ADMISSION, CLASSES))
                .check(classes);
    }

    @Test
    void theClassesNeverNameThePlanOrTheAdmission() {
        noClasses().that().haveNameMatching(named(CLASSES))
                .should().dependOnClassesThat().haveNameMatching(named(BACKEND, PLAN, ADMISSION))
                .check(classes);
    }

    @Test
    void theAdmissionNeverNamesThePlanTheClassOrTheRelay() {
        noClasses().that().haveNameMatching(named(ADMISSION))
                .should().dependOnClassesThat().haveNameMatching(named(BACKEND, PLAN, CLASSES,
                        new String[] {"Relay", "Tombstones", "ConditionalWrite"}))
                .check(classes);
    }

    @Test
    void onlyTheBackendNamesThePlan() {
        noClasses().that().haveNameMatching(named(ADMISSION, CLASSES, STORAGE))
                .should().dependOnClassesThat().haveNameMatching(named(BACKEND, PLAN))
                .check(classes);
    }
}
