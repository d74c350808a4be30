package io.stockade.conformance.arch;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.nameMatching;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The conformance suite's boundaries. It talks to a proxy over HTTP like any user, so none of its code uses the
 * proxy's classes (the proxy is a test-scope dependency, for CI to launch one). The history checker judges a history
 * and knows nothing of how it was made; the reports read results, not the machinery that produced them; a writer
 * knows its arguments, its lease and its request, nothing of the run that coordinates it (its report lines are the
 * interface). The command line is the top: nothing calls into it, and only the entry points end the JVM (the
 * library runs inside users' JUnit tests). The launcher is Java 8 code that loads on any JVM.
 */
class ArchitectureTest {
    private static final String SUITE = "io.stockade.conformance";
    private static final String MAIN = SUITE + ".Main";
    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(SUITE);
        for (String c : new String[] {MAIN, SUITE + ".check.HistoryChecker", SUITE + ".run.ScenarioRunner",
                SUITE + ".run.RunResult", SUITE + ".writer.WriterMain", SUITE + ".launch.Launch"}) {
            assertTrue(classes.contain(c), "no class " + c + ": renamed? (a rule naming it would pass vacuously)");
        }
    }

    @Test
    void noCodeOfTheSuiteUsesTheProxysClasses() {
        noClasses().should().dependOnClassesThat().resideInAPackage("io.stockade.proxy..")
                .because("the suite tests a deployed proxy over HTTP, as a user would; the proxy is a test-scope"
                        + " dependency only")
                .check(classes);
    }

    @Test
    void theCheckerDependsOnTheJdkAndItsNullAnnotationsAlone() {
        classes().that().resideInAPackage(SUITE + ".check..")
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "org.jspecify.annotations..",
                        SUITE + ".check..")
                .because("it judges a history, however it was made (the proxy's tests feed it theirs), and knows"
                        + " nothing of the runner, the writers or the reports (JSpecify's null annotations aside)")
                .check(classes);
    }

    @Test
    void theReportsReadResultsNotTheMachinery() {
        noClasses().that().resideInAPackage(SUITE + ".report..")
                .should().dependOnClassesThat(resideInAnyPackage(SUITE + ".run..", SUITE + ".fault..",
                        SUITE + ".lease..", SUITE + ".storage..")
                        .and(not(nameMatching("io\\.stockade\\.conformance\\.run\\.RunResult(\\$.*)?"))))
                .because("a report is drawn from the results (RunResult, ScenarioResult), whoever ran them")
                .check(classes);
    }

    @Test
    void aWriterKnowsNothingOfTheRunThatCoordinatesIt() {
        noClasses().that().resideInAPackage(SUITE + ".writer..")
                .should().dependOnClassesThat().resideInAnyPackage(SUITE + ".run..", SUITE + ".report..",
                        SUITE + ".fault..", SUITE + ".storage..", SUITE + ".check..")
                .because("a writer (a process or a thread of the suite) reports its steps as lines; the run reads"
                        + " them")
                .check(classes);
    }

    @Test
    void theCommandLineIsTheTop() {
        noClasses().that().doNotHaveFullyQualifiedName(MAIN)
                .should().dependOnClassesThat().haveFullyQualifiedName(MAIN)
                .because("the library (Conformance) and the run are used from JUnit; the launcher finds Main by"
                        + " name")
                .check(classes);
    }

    @Test
    void onlyTheEntryPointsEndTheJvm() {
        noClasses().that().doNotHaveFullyQualifiedName(MAIN)
                .and().doNotHaveFullyQualifiedName(SUITE + ".writer.WriterMain")
                .and().doNotHaveFullyQualifiedName(SUITE + ".launch.Launch")
                .should().callMethod(System.class, "exit", int.class)
                .because("the suite runs inside users' JUnit tests (Conformance.run) and writers run as threads of it")
                .check(classes);
    }

    @Test
    void theLauncherDependsOnTheJdkAndTheSdksLauncherAlone() {
        classes().that().resideInAPackage(SUITE + ".launch..")
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", SUITE + ".launch..",
                        "io.stockade.client.launch..")
                .because("it is compiled for Java 8 so that an old Java is told what it needs, and hands over to"
                        + " Main by name")
                .check(classes);
    }
}
