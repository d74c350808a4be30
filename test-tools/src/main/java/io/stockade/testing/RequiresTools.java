package io.stockade.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A test class that needs programs of the machine ({@link Tools.Tool}). Where one is missing, the class is reported
 * as <em>skipped</em>, with the command that installs it; on a CI run ({@code CI=true}) it <em>fails</em> with the
 * tool's name instead: a run that lacks a tool never passes with whole test classes left out.
 *
 * <pre>{@code
 * @RequiresTools(Tools.Tool.ETCD)
 * class EtcdContractIT { ... }
 * }</pre>
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ExtendWith(Tools.Condition.class)
public @interface RequiresTools {
    Tools.Tool[] value();
}
