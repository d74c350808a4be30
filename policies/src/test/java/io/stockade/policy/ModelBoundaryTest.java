package io.stockade.policy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The model ({@code io.stockade.policy}) is read by every module and reads none of them: not its YAML readers
 * ({@code io.stockade.policy.yaml}, which depend on it), not the proxy, not Helidon, not SnakeYAML.
 */
class ModelBoundaryTest {
    private static final JavaClasses POLICIES = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.stockade.policy");

    @Test
    void theModelDependsOnNeitherItsReadersNorAnyServerNorYaml() {
        noClasses().that().resideInAPackage("io.stockade.policy")
                .should().dependOnClassesThat().resideInAnyPackage("io.stockade.policy.yaml..", "io.stockade.proxy..",
                        "io.helidon..", "org.yaml..")
                .check(POLICIES);
    }

    @Test
    void nothingInPoliciesDependsOnTheProxyOrHelidon() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("io.stockade.proxy..", "io.helidon..")
                .check(POLICIES);
    }
}
